package secrets

import (
	"context"
	"time"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Record is one org config value as stored: sealed, never plaintext.
type Record struct {
	OrgID string
	// Key is the org config key name (api:llm_api_key, db:warehouse, webhook_url).
	Key string
	// Sealed is what Keyring.Seal returned for (OrgID, Key, value).
	Sealed []byte
	// KeyID names the master key Sealed is under (Keyring.Seal's second result).
	KeyID     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ListFilter narrows a listing of records or of organizations.
type ListFilter struct {
	svctype.ListOptions
	// NotKeyID, when set, keeps only values sealed under another master key than this one:
	// what rotation still has to move.
	NotKeyID string
}

// Store is where sealed org config lives; engine/store implements it and
// engine/store/storetest holds it to this contract on every backend. Every method that
// reads or writes a value takes the org id and puts it in its query; the one method that
// spans organizations (ListOrgConfigOrgs) returns organization ids only.
type Store interface {
	// PutOrgConfig inserts r, or replaces the sealed value of the org's key (keeping its
	// CreatedAt), and reports whether it inserted. It sets r.CreatedAt and r.UpdatedAt
	// to what is stored (UpdatedAt is the store's now when zero).
	PutOrgConfig(ctx context.Context, r *Record) (created bool, err error)
	// GetOrgConfig returns one record; ErrNotFound.
	GetOrgConfig(ctx context.Context, orgID, key string) (*Record, error)
	// ListOrgConfig pages an organization's records by key name; the cursor is opaque.
	ListOrgConfig(ctx context.Context, orgID string, f ListFilter) (svctype.Page[Record], error)
	// DeleteOrgConfig removes one record; ErrNotFound.
	DeleteOrgConfig(ctx context.Context, orgID, key string) error
	// ListOrgConfigOrgs pages the ids of the organizations that hold records (under
	// another key than f.NotKeyID, when set), in order. It reads no value.
	ListOrgConfigOrgs(ctx context.Context, f ListFilter) (svctype.Page[string], error)
	// ResealOrgConfig replaces old's sealed value with sealed (under keyID) if the stored
	// record still holds old.Sealed, without touching UpdatedAt: rotation moves a value
	// to a new master key and must never undo a write made since it read the value.
	// ErrConflict when the record changed, ErrNotFound when it is gone.
	ResealOrgConfig(ctx context.Context, old *Record, sealed []byte, keyID string) error
}

// Entry is an org config key as it may be shown: its value masked (Mask), never the
// plaintext.
type Entry struct {
	Key string `json:"key"`
	// Masked is the value masked by Mask.
	Masked    string    `json:"value"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}
