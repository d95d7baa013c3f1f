package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Org config: an organization's values encrypted at rest (engine/secrets). Callers outside
// execution see values masked; the plaintext leaves the engine only through OrgConfigValue,
// for execution (action headers, datasources, model keys). Nothing here logs a value, and
// no error names one.

// Limits of org config.
const (
	// MaxOrgConfigKeyLen is the longest key name, in bytes.
	MaxOrgConfigKeyLen = 200
	// MaxOrgConfigValueLen is the largest value, in bytes (64 KiB).
	MaxOrgConfigValueLen = 64 << 10
)

// OrgConfigPrefix marks a reference to an org config value in an action or workflow
// field: orgconfig:<key> (orgconfig:api:llm_api_key, orgconfig:db:warehouse).
const OrgConfigPrefix = "orgconfig:"

var orgConfigKeyChars = regexp.MustCompile(`^[A-Za-z0-9:_.\-/]+$`)

// checkOrgConfigKey: 1-200 characters of letters, digits and : _ - . /, where a / separates
// non-empty segments other than . and .. (so the key is also a path segment of
// DELETE /org-config/{key} once escaped, and no client normalises it away).
func checkOrgConfigKey(key string) *Problem {
	switch {
	case key == "":
		return &Problem{Pointer: "/key", Message: "is required"}
	case len(key) > MaxOrgConfigKeyLen:
		return &Problem{Pointer: "/key", Message: fmt.Sprintf("must be at most %d characters", MaxOrgConfigKeyLen)}
	case !orgConfigKeyChars.MatchString(key):
		return &Problem{Pointer: "/key", Message: "may contain only letters, digits and the characters : _ - . /"}
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return &Problem{Pointer: "/key", Message: "must not start or end with /, nor have an empty, . or .. segment between two /"}
		}
	}
	return nil
}

// checkOrgConfigValue never quotes the value.
func checkOrgConfigValue(value string) *Problem {
	switch {
	case value == "":
		return &Problem{Pointer: "/value", Message: "is required"}
	case len(value) > MaxOrgConfigValueLen:
		return &Problem{Pointer: "/value", Message: fmt.Sprintf("must be at most %d bytes", MaxOrgConfigValueLen)}
	case !utf8.ValidString(value):
		return &Problem{Pointer: "/value", Message: "must be valid UTF-8"}
	}
	return nil
}

// SetOrgConfig stores value under key for the organization, sealed, replacing any value
// the key had; it reports whether the key is new. The entry it returns is masked.
func (e *Engine) SetOrgConfig(ctx context.Context, orgID, key, value string) (*secrets.Entry, bool, error) {
	if key == CatchAllKey {
		defer e.catchAlls.forget(orgID)
	}
	if err := checkOrg(orgID); err != nil {
		return nil, false, err
	}
	var ve ValidationError
	for _, p := range []*Problem{checkOrgConfigKey(key), checkOrgConfigValue(value)} {
		if p != nil {
			ve.Problems = append(ve.Problems, *p)
		}
	}
	if len(ve.Problems) > 0 {
		return nil, false, &ve
	}
	sealed, keyID, err := e.keys.Seal(orgID, key, []byte(value))
	if err != nil {
		return nil, false, fmt.Errorf("org config key %q: %w", key, err)
	}
	r := &secrets.Record{OrgID: orgID, Key: key, Sealed: sealed, KeyID: keyID, UpdatedAt: e.now().UTC()}
	created, err := e.store.PutOrgConfig(ctx, r)
	if err != nil {
		return nil, false, err
	}
	return &secrets.Entry{Key: key, Masked: secrets.Mask(value), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, created, nil
}

// ListOrgConfig pages the organization's keys by name, each value masked. A value that
// does not open (sealed under a master key this process does not have) is listed with the
// fixed mask and logged, by key name and key id, so it can be set again.
func (e *Engine) ListOrgConfig(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[secrets.Entry], error) {
	var out svctype.Page[secrets.Entry]
	if err := checkOrg(orgID); err != nil {
		return out, err
	}
	if e.keys == nil {
		return out, ErrNoMasterKey
	}
	page, err := e.store.ListOrgConfig(ctx, orgID, secrets.ListFilter{ListOptions: opts})
	if err != nil {
		return out, err
	}
	out = svctype.Page[secrets.Entry]{Items: make([]secrets.Entry, 0, len(page.Items)), NextCursor: page.NextCursor}
	for _, r := range page.Items {
		masked := secrets.Masked
		plain, err := e.keys.Open(orgID, r.Key, r.Sealed)
		if err == nil {
			masked = secrets.Mask(string(plain))
			clear(plain)
		} else {
			e.log.WarnContext(ctx, "org config value does not open", "org_id", orgID, "key", r.Key, "err", err)
		}
		out.Items = append(out.Items, secrets.Entry{Key: r.Key, Masked: masked, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt})
	}
	return out, nil
}

// DeleteOrgConfig removes a key and its value; ErrNotFound when the organization has no
// such key.
func (e *Engine) DeleteOrgConfig(ctx context.Context, orgID, key string) error {
	if key == CatchAllKey {
		defer e.catchAlls.forget(orgID)
	}
	if err := checkOrg(orgID); err != nil {
		return err
	}
	if checkOrgConfigKey(key) != nil {
		return fmt.Errorf("%w: org config key", ErrNotFound)
	}
	return e.store.DeleteOrgConfig(ctx, orgID, key)
}

// OrgConfigValue returns the plaintext of one org config value, for execution only (an
// action's headers or datasource, a model provider key): it must never reach a run's
// context, an event, a log or an answer. A missing key is ErrNoOrgConfigKey (an
// ErrNotFound) with the key named in the message; no error carries a value.
func (e *Engine) OrgConfigValue(ctx context.Context, orgID, key string) (string, error) {
	if err := checkOrg(orgID); err != nil {
		return "", err
	}
	if e.keys == nil {
		return "", fmt.Errorf("org config key %q: %w", shortKey(key), ErrNoMasterKey)
	}
	if checkOrgConfigKey(key) != nil {
		return "", fmt.Errorf("%w: %q", ErrNoOrgConfigKey, shortKey(key))
	}
	return e.orgConfigValueIn(ctx, e.store, orgID, key)
}

// orgConfigValueIn is OrgConfigValue read through q: inside a transaction, the lookup must
// not wait for a second connection of the pool that the transaction may have drained.
func (e *Engine) orgConfigValueIn(ctx context.Context, q Querier, orgID, key string) (string, error) {
	if e.keys == nil {
		return "", fmt.Errorf("org config key %q: %w", shortKey(key), ErrNoMasterKey)
	}
	r, err := q.GetOrgConfig(ctx, orgID, key)
	if errors.Is(err, ErrNotFound) {
		return "", fmt.Errorf("%w: %q", ErrNoOrgConfigKey, key)
	}
	if err != nil {
		return "", err
	}
	plain, err := e.keys.Open(orgID, key, r.Sealed)
	if err != nil {
		return "", fmt.Errorf("org config key %q: %w", key, err)
	}
	return string(plain), nil
}

// ResolveOrgConfig returns the value an orgconfig:<key> reference names, and any other
// string unchanged: what an action field that may hold a reference goes through at
// execution time.
func (e *Engine) ResolveOrgConfig(ctx context.Context, orgID, s string) (string, error) {
	key, ok := strings.CutPrefix(s, OrgConfigPrefix)
	if !ok {
		return s, nil
	}
	return e.OrgConfigValue(ctx, orgID, key)
}

// shortKey keeps an error message short when a reference names an overlong key.
func shortKey(key string) string {
	if len(key) <= MaxOrgConfigKeyLen {
		return key
	}
	return key[:MaxOrgConfigKeyLen] + "…"
}

// Keyring returns the master keys the engine seals org config, tokens and webhook secrets
// with (nil without one): another engine over the same store needs the same.
func (e *Engine) Keyring() *secrets.Keyring { return e.keys }
