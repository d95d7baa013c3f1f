// Package orgconfig is an organization's configuration: its org config values, encrypted
// at rest (engine/secrets), and its features (agent_forms). Callers outside execution see
// values masked; the plaintext leaves the package only through OrgConfigValue, for execution (action
// headers, datasources, model keys, OAuth apps, the catch-all webhook). Nothing here logs a
// value, and no error names one. Other features learn of a changed key through Subscribe.
package orgconfig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/svctype"
)

// OrgConfig is the org config of every organization, over its part of the store.
type OrgConfig struct {
	store Store
	keys  *secrets.Keyring
	log   *slog.Logger
	now   func() time.Time

	mu   sync.RWMutex
	subs []func(orgID, key string)
}

// New returns the service; keys nil leaves org config unavailable (ErrNoMasterKey).
func New(st Store, keys *secrets.Keyring, log *slog.Logger, now func() time.Time) *OrgConfig {
	return &OrgConfig{store: st, keys: keys, log: log, now: now}
}

// Register makes org config the core's secret source: what outside calls read
// (StepCall.Secret).
func (e *OrgConfig) Register(c *core.Core) { c.SetSecrets(e.OrgConfigValue) }

// Subscribe makes fn hear of every key set or deleted (after the write, whether or not it
// succeeded): caches of values other features read (the catch-all webhook address) forget
// them this way.
func (e *OrgConfig) Subscribe(fn func(orgID, key string)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.subs = append(e.subs, fn)
}

func (e *OrgConfig) changed(orgID, key string) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, fn := range e.subs {
		fn(orgID, key)
	}
}

// Org config keys other features read.
const (
	// LLMAPIKey and LLMBaseURL are the organization's model provider key and base URL (the
	// llm action, drafted forms).
	LLMAPIKey  = "api:llm_api_key"
	LLMBaseURL = "api:llm_base_url"
	// DefaultLLMModel is the model asked when nothing names one.
	DefaultLLMModel = "gpt-4o-mini"
)

// Errors. ErrNoKey is an ErrNotFound whose message, where it is wrapped, names the key
// (never a value); ErrNoMasterKey: the engine has no keyring, so org config can be neither
// written nor read.
var (
	ErrNoKey       = fmt.Errorf("%w: no such org config key", svctype.ErrNotFound)
	ErrNoMasterKey = secrets.ErrNoMasterKey
)

// Limits of org config.
const (
	// MaxKeyLen is the longest key name, in bytes.
	MaxKeyLen = 200
	// MaxValueLen is the largest value, in bytes (64 KiB).
	MaxValueLen = 64 << 10
)

// Prefix marks a reference to an org config value in an action or workflow
// field: orgconfig:<key> (orgconfig:api:llm_api_key, orgconfig:db:warehouse).
const Prefix = "orgconfig:"

var orgConfigKeyChars = regexp.MustCompile(`^[A-Za-z0-9:_.\-/]+$`)

// checkOrgConfigKey: 1-200 characters of letters, digits and : _ - . /, where a / separates
// non-empty segments other than . and .. (so the key is also a path segment of
// DELETE /org-config/{key} once escaped, and no client normalises it away).
func checkOrgConfigKey(key string) *core.Problem {
	switch {
	case key == "":
		return &core.Problem{Pointer: "/key", Message: "is required"}
	case len(key) > MaxKeyLen:
		return &core.Problem{Pointer: "/key", Message: fmt.Sprintf("must be at most %d characters", MaxKeyLen)}
	case !orgConfigKeyChars.MatchString(key):
		return &core.Problem{Pointer: "/key", Message: "may contain only letters, digits and the characters : _ - . /"}
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return &core.Problem{Pointer: "/key", Message: "must not start or end with /, nor have an empty, . or .. segment between two /"}
		}
	}
	return nil
}

// checkOrgConfigValue never quotes the value.
func checkOrgConfigValue(value string) *core.Problem {
	switch {
	case value == "":
		return &core.Problem{Pointer: "/value", Message: "is required"}
	case len(value) > MaxValueLen:
		return &core.Problem{Pointer: "/value", Message: fmt.Sprintf("must be at most %d bytes", MaxValueLen)}
	case !utf8.ValidString(value):
		return &core.Problem{Pointer: "/value", Message: "must be valid UTF-8"}
	}
	return nil
}

// SetOrgConfig stores value under key for the organization, sealed, replacing any value
// the key had; it reports whether the key is new. The entry it returns is masked.
func (e *OrgConfig) SetOrgConfig(ctx context.Context, orgID, key, value string) (*secrets.Entry, bool, error) {
	defer e.changed(orgID, key)
	if err := core.CheckOrg(orgID); err != nil {
		return nil, false, err
	}
	var ve core.ValidationError
	for _, p := range []*core.Problem{checkOrgConfigKey(key), checkOrgConfigValue(value)} {
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
func (e *OrgConfig) ListOrgConfig(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[secrets.Entry], error) {
	var out svctype.Page[secrets.Entry]
	if err := core.CheckOrg(orgID); err != nil {
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

// DeleteOrgConfig removes a key and its value; svctype.ErrNotFound when the organization has no
// such key.
func (e *OrgConfig) DeleteOrgConfig(ctx context.Context, orgID, key string) error {
	defer e.changed(orgID, key)
	if err := core.CheckOrg(orgID); err != nil {
		return err
	}
	if checkOrgConfigKey(key) != nil {
		return fmt.Errorf("%w: org config key", svctype.ErrNotFound)
	}
	return e.store.DeleteOrgConfig(ctx, orgID, key)
}

// OrgConfigValue returns the plaintext of one org config value, for execution only (an
// action's headers or datasource, a model provider key): it must never reach a run's
// context, an event, a log or an answer. A missing key is ErrNoKey (an
// svctype.ErrNotFound) with the key named in the message; no error carries a value.
func (e *OrgConfig) OrgConfigValue(ctx context.Context, orgID, key string) (string, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return "", err
	}
	if e.keys == nil {
		return "", fmt.Errorf("org config key %q: %w", ShortKey(key), ErrNoMasterKey)
	}
	if checkOrgConfigKey(key) != nil {
		return "", fmt.Errorf("%w: %q", ErrNoKey, ShortKey(key))
	}
	return e.ValueIn(ctx, e.store, orgID, key)
}

// ValueIn is OrgConfigValue read through q: inside a transaction, the lookup must not wait
// for a second connection of the pool that the transaction may have drained.
func (e *OrgConfig) ValueIn(ctx context.Context, q Values, orgID, key string) (string, error) {
	if e.keys == nil {
		return "", fmt.Errorf("org config key %q: %w", ShortKey(key), ErrNoMasterKey)
	}
	r, err := q.GetOrgConfig(ctx, orgID, key)
	if errors.Is(err, svctype.ErrNotFound) {
		return "", fmt.Errorf("%w: %q", ErrNoKey, key)
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
func (e *OrgConfig) ResolveOrgConfig(ctx context.Context, orgID, s string) (string, error) {
	key, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return s, nil
	}
	return e.OrgConfigValue(ctx, orgID, key)
}

// ShortKey keeps an error message short when a reference names an overlong key.
func ShortKey(key string) string {
	if len(key) <= MaxKeyLen {
		return key
	}
	return key[:MaxKeyLen] + "…"
}

// Keyring returns the master keys the engine seals org config, tokens and webhook secrets
// with (nil without one): another engine over the same store needs the same.
func (e *OrgConfig) Keyring() *secrets.Keyring { return e.keys }

// OrgFeatures returns the organization's features.
func (e *OrgConfig) OrgFeatures(ctx context.Context, orgID string) (svctype.OrgFeatures, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.OrgFeatures{}, err
	}
	return e.store.GetOrgFeatures(ctx, orgID)
}

// SetOrgFeatures stores the organization's features.
func (e *OrgConfig) SetOrgFeatures(ctx context.Context, orgID string, f svctype.OrgFeatures) (svctype.OrgFeatures, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return f, err
	}
	return f, e.store.PutOrgFeatures(ctx, orgID, f)
}
