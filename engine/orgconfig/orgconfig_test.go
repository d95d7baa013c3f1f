package orgconfig_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/testlog"
)

// orgConfigBundle is an engine with a keyring and a captured log.
type orgConfigBundle struct {
	Eng  *engine.Engine
	St   *store.Store
	key  []byte
	logs *enginetest.LockedBuffer
	Ctx  context.Context
}

func setupOrgConfig(t *testing.T, dialect string, keys ...[]byte) *orgConfigBundle {
	t.Helper()
	if len(keys) == 0 {
		k, err := secrets.GenerateKey()
		require.NoError(t, err)
		keys = [][]byte{k}
	}
	kr, err := secrets.NewKeyring(keys...)
	require.NoError(t, err)
	st := store.OpenTest(t, dialect)
	logs := &enginetest.LockedBuffer{}
	eng, err := engine.New(engine.Config{Store: st, Keyring: kr, Logger: testlog.Tee(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	return &orgConfigBundle{Eng: eng, St: st, key: keys[0], logs: logs, Ctx: context.Background()}
}

// The plaintexts of these tests: none may appear in an error, an entry or the log.
const (
	llmKey   = "sk-live-7b1e4a09c2d84f31aa6e"
	dsnValue = "postgres://svc:hunter2-pw@db.internal:5432/warehouse"
	shortPIN = "4321"
)

func requireNoPlaintext(t *testing.T, texts ...string) {
	t.Helper()
	for _, s := range texts {
		for _, secret := range []string{llmKey, dsnValue, "hunter2", shortPIN, "wrong-org-secret-0000"} {
			require.NotContains(t, s, secret)
		}
	}
}

func TestOrgConfigLifecycle(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setupOrgConfig(t, dialect)
			e, created, err := b.Eng.SetOrgConfig(b.Ctx, "acme", "api:llm_api_key", llmKey)
			require.NoError(t, err)
			require.True(t, created)
			require.Equal(t, "api:llm_api_key", e.Key)
			require.Equal(t, "••••••••aa6e", e.Masked)
			require.False(t, e.UpdatedAt.IsZero())

			_, created, err = b.Eng.SetOrgConfig(b.Ctx, "acme", "db:warehouse", dsnValue)
			require.NoError(t, err)
			require.True(t, created)
			_, _, err = b.Eng.SetOrgConfig(b.Ctx, "acme", "pin", shortPIN)
			require.NoError(t, err)
			_, _, err = b.Eng.SetOrgConfig(b.Ctx, "globex", "api:llm_api_key", "wrong-org-secret-0000")
			require.NoError(t, err)

			e2, created, err := b.Eng.SetOrgConfig(b.Ctx, "acme", "api:llm_api_key", llmKey+"-v2")
			require.NoError(t, err)
			require.False(t, created, "an update")
			require.Equal(t, "••••••••e-v2", e2.Masked)
			require.Equal(t, e.CreatedAt, e2.CreatedAt)

			page, err := b.Eng.ListOrgConfig(b.Ctx, "acme", svctype.ListOptions{})
			require.NoError(t, err)
			require.Empty(t, page.NextCursor)
			var got []string
			for _, it := range page.Items {
				got = append(got, it.Key+"="+it.Masked)
			}
			require.Equal(t, []string{"api:llm_api_key=••••••••e-v2", "db:warehouse=••••••••ouse", "pin=••••••••"}, got)

			v, err := b.Eng.OrgConfigValue(b.Ctx, "acme", "db:warehouse")
			require.NoError(t, err)
			require.Equal(t, dsnValue, v)
			v, err = b.Eng.ResolveOrgConfig(b.Ctx, "acme", "orgconfig:api:llm_api_key")
			require.NoError(t, err)
			require.Equal(t, llmKey+"-v2", v)
			v, err = b.Eng.ResolveOrgConfig(b.Ctx, "acme", "Bearer literal")
			require.NoError(t, err)
			require.Equal(t, "Bearer literal", v)

			require.NoError(t, b.Eng.DeleteOrgConfig(b.Ctx, "acme", "db:warehouse"))
			require.ErrorIs(t, b.Eng.DeleteOrgConfig(b.Ctx, "acme", "db:warehouse"), engine.ErrNotFound)
			_, err = b.Eng.OrgConfigValue(b.Ctx, "acme", "db:warehouse")
			require.ErrorIs(t, err, engine.ErrNoOrgConfigKey)
			require.ErrorIs(t, err, engine.ErrNotFound)
			require.Contains(t, err.Error(), `"db:warehouse"`, "the error names the missing key")

			// Another organization's key is missing, whatever its name.
			_, err = b.Eng.OrgConfigValue(b.Ctx, "globex", "pin")
			require.ErrorIs(t, err, engine.ErrNoOrgConfigKey)
			require.ErrorIs(t, b.Eng.DeleteOrgConfig(b.Ctx, "globex", "pin"), engine.ErrNotFound)
			v, err = b.Eng.OrgConfigValue(b.Ctx, "globex", "api:llm_api_key")
			require.NoError(t, err)
			require.Equal(t, "wrong-org-secret-0000", v, "each organization its own value")

			requireNoPlaintext(t, b.logs.String())
		})
	}
}

func TestOrgConfigPaging(t *testing.T) {
	t.Parallel()
	b := setupOrgConfig(t, "sqlite")
	for _, k := range []string{"e", "d", "c", "b", "a"} {
		_, _, err := b.Eng.SetOrgConfig(b.Ctx, "acme", "api:"+k, "value-"+k+"-0123456789")
		require.NoError(t, err)
	}
	var keys []string
	opts := svctype.ListOptions{Limit: 2}
	for {
		page, err := b.Eng.ListOrgConfig(b.Ctx, "acme", opts)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Items), 2)
		for _, it := range page.Items {
			keys = append(keys, it.Key)
			require.True(t, strings.HasPrefix(it.Masked, secrets.Masked))
		}
		if page.NextCursor == "" {
			break
		}
		opts.Cursor = page.NextCursor
	}
	require.Equal(t, []string{"api:a", "api:b", "api:c", "api:d", "api:e"}, keys)
	_, err := b.Eng.ListOrgConfig(b.Ctx, "acme", svctype.ListOptions{Cursor: "garbage!"})
	require.ErrorIs(t, err, engine.ErrInvalidCursor)
}

func TestOrgConfigValidation(t *testing.T) {
	t.Parallel()
	b := setupOrgConfig(t, "sqlite")
	const value = "a-valid-secret-value-123"
	tests := []struct {
		name, key, value string
		pointers         []string
	}{
		{"empty key", "", value, []string{"/key"}},
		{"long key", strings.Repeat("k", 201), value, []string{"/key"}},
		{"space in key", "api:my key", value, []string{"/key"}},
		{"percent in key", "api:%41", value, []string{"/key"}},
		{"non-ascii key", "api:clé", value, []string{"/key"}},
		{"leading slash", "/db", value, []string{"/key"}},
		{"trailing slash", "db/", value, []string{"/key"}},
		{"empty segment", "db//main", value, []string{"/key"}},
		{"dot segment", "db/./main", value, []string{"/key"}},
		{"dot-dot key", "..", value, []string{"/key"}},
		{"empty value", "api:k", "", []string{"/value"}},
		{"value over 64 KiB", "api:k", strings.Repeat("v", 64<<10+1), []string{"/value"}},
		{"value not UTF-8", "api:k", "secret\xff\xfe", []string{"/value"}},
		{"both", "", "", []string{"/key", "/value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := b.Eng.SetOrgConfig(b.Ctx, "acme", tt.key, tt.value)
			var ve *engine.ValidationError
			require.ErrorAs(t, err, &ve)
			var ptrs []string
			for _, p := range ve.Problems {
				ptrs = append(ptrs, p.Pointer)
			}
			require.Equal(t, tt.pointers, ptrs)
			if tt.value != "" {
				require.NotContains(t, err.Error(), tt.value, "a problem never quotes the value")
			}
		})
	}
	ok := []struct{ key, value string }{
		{strings.Repeat("k", 200), "v"},
		{"db:main/replica-2.eu_west", "v"},
		{"webhook_url", "https://hooks.example.com/x"},
		{"api:k", strings.Repeat("v", 64<<10)},
		{"api:unicode", "pässwörd-✓"},
	}
	for _, tt := range ok {
		_, _, err := b.Eng.SetOrgConfig(b.Ctx, "acme", tt.key, tt.value)
		require.NoError(t, err, tt.key)
	}
	_, _, err := b.Eng.SetOrgConfig(b.Ctx, "bad org!", "api:k", "v")
	require.ErrorIs(t, err, engine.ErrInvalidOrg)
	require.ErrorIs(t, b.Eng.DeleteOrgConfig(b.Ctx, "acme", "no such/../key"), engine.ErrNotFound)
	_, err = b.Eng.OrgConfigValue(b.Ctx, "acme", strings.Repeat("x", 300))
	require.ErrorIs(t, err, engine.ErrNoOrgConfigKey)
	require.Less(t, len(err.Error()), 300, "a reference to an overlong key is shortened in the error")
}

func TestOrgConfigWithoutMasterKey(t *testing.T) {
	t.Parallel()
	st := store.OpenTest(t, "sqlite")
	eng, err := engine.New(engine.Config{Store: st})
	require.NoError(t, err)
	ctx := context.Background()
	_, _, err = eng.SetOrgConfig(ctx, "acme", "api:k", llmKey)
	require.ErrorIs(t, err, engine.ErrNoMasterKey)
	_, err = eng.ListOrgConfig(ctx, "acme", svctype.ListOptions{})
	require.ErrorIs(t, err, engine.ErrNoMasterKey)
	_, err = eng.OrgConfigValue(ctx, "acme", "api:k")
	require.ErrorIs(t, err, engine.ErrNoMasterKey)
	require.Contains(t, err.Error(), "api:k")
	requireNoPlaintext(t, err.Error())
}

// TestOrgConfigAcrossMasterKeys: an engine whose keyring holds a new key and the old one
// reads values the old key sealed and seals under the new one; a value under a key it does
// not hold is listed with the fixed mask, logged by key name, and fails OrgConfigValue.
func TestOrgConfigAcrossMasterKeys(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setupOrgConfig(t, dialect)
			_, _, err := b.Eng.SetOrgConfig(b.Ctx, "acme", "api:llm_api_key", llmKey)
			require.NoError(t, err)

			newKey, err := secrets.GenerateKey()
			require.NoError(t, err)
			both, err := secrets.NewKeyring(newKey, b.key)
			require.NoError(t, err)
			eng2, err := engine.New(engine.Config{Store: b.St, Keyring: both, Logger: testlog.Tee(slog.NewTextHandler(b.logs, nil))})
			require.NoError(t, err)
			v, err := eng2.OrgConfigValue(b.Ctx, "acme", "api:llm_api_key")
			require.NoError(t, err)
			require.Equal(t, llmKey, v)
			_, _, err = eng2.SetOrgConfig(b.Ctx, "acme", "db:warehouse", dsnValue)
			require.NoError(t, err)
			r, err := b.St.GetOrgConfig(b.Ctx, "acme", "db:warehouse")
			require.NoError(t, err)
			require.Equal(t, secrets.KeyID(newKey), r.KeyID)

			// The first engine has only the old key: the new value is beyond it.
			_, openErr := b.Eng.OrgConfigValue(b.Ctx, "acme", "db:warehouse")
			require.ErrorIs(t, openErr, secrets.ErrUnknownKey)
			require.Contains(t, openErr.Error(), "db:warehouse")
			page, err := b.Eng.ListOrgConfig(b.Ctx, "acme", svctype.ListOptions{})
			require.NoError(t, err)
			require.Len(t, page.Items, 2)
			require.Equal(t, "••••••••aa6e", page.Items[0].Masked)
			require.Equal(t, secrets.Masked, page.Items[1].Masked, "what does not open is all mask")
			require.Contains(t, b.logs.String(), "org config value does not open")
			require.Contains(t, b.logs.String(), "key=db:warehouse")
			requireNoPlaintext(t, b.logs.String(), openErr.Error())
		})
	}
}

// TestOrgConfigValueCopiedToAnotherOrg: sealed bytes moved in the database to another
// organization's row (or another key's) do not open there.
func TestOrgConfigValueCopiedToAnotherOrg(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setupOrgConfig(t, dialect)
			_, _, err := b.Eng.SetOrgConfig(b.Ctx, "acme", "api:llm_api_key", llmKey)
			require.NoError(t, err)
			r, err := b.St.GetOrgConfig(b.Ctx, "acme", "api:llm_api_key")
			require.NoError(t, err)
			for _, dst := range []struct{ org, key string }{{"globex", "api:llm_api_key"}, {"acme", "api:other"}} {
				_, err := b.St.PutOrgConfig(b.Ctx, &secrets.Record{OrgID: dst.org, Key: dst.key, Sealed: r.Sealed, KeyID: r.KeyID})
				require.NoError(t, err)
				_, err = b.Eng.OrgConfigValue(b.Ctx, dst.org, dst.key)
				require.ErrorIs(t, err, secrets.ErrDecrypt, "%s %s", dst.org, dst.key)
				require.False(t, errors.Is(err, engine.ErrNotFound))
				requireNoPlaintext(t, err.Error())
			}
			requireNoPlaintext(t, b.logs.String())
		})
	}
}
