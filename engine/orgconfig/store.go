package orgconfig

import (
	"context"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Store is what org config calls on its store: the organizations' sealed values and their
// features. engine/secrets and engine/storage document each method's contract.
type Store interface {
	Values
	PutOrgConfig(ctx context.Context, r *secrets.Record) (created bool, err error)
	ListOrgConfig(ctx context.Context, orgID string, f secrets.ListFilter) (svctype.Page[secrets.Record], error)
	DeleteOrgConfig(ctx context.Context, orgID, key string) error
	GetOrgFeatures(ctx context.Context, orgID string) (svctype.OrgFeatures, error)
	PutOrgFeatures(ctx context.Context, orgID string, f svctype.OrgFeatures) error
}

// Values reads one sealed value: what ValueIn reads through, the store or a transaction.
type Values interface {
	GetOrgConfig(ctx context.Context, orgID, key string) (*secrets.Record, error)
}
