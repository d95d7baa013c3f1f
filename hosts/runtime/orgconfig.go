package runtime

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/engine/secrets"
)

// OrgConfigBody is the body of POST /org-config. The value has no schema constraint on
// purpose: the engine checks it, and its problems never quote it, where Huma's would.
type OrgConfigBody struct {
	Key   string `json:"key" doc:"Key name: 1-200 characters of letters, digits and : _ - . / (api:llm_api_key, db:warehouse, webhook_url)."`
	Value string `json:"value" doc:"The secret, up to 64 KiB. Encrypted at rest; never returned."`
}

// OrgConfigEntry is an org config key as every answer shows it: the value masked.
type OrgConfigEntry struct {
	Key       string    `json:"key" example:"api:llm_api_key" doc:"Key name."`
	Value     string    `json:"value" example:"••••••••abcd" doc:"The value masked: the last 4 characters of a value of 12 or more characters, else only bullets. Never the plaintext."`
	UpdatedAt time.Time `json:"updated_at" doc:"When the value was last set."`
}

func orgConfigEntry(e secrets.Entry) OrgConfigEntry {
	return OrgConfigEntry{Key: e.Key, Value: e.Masked, UpdatedAt: e.UpdatedAt}
}

type orgConfigOutput struct {
	Status int
	Body   OrgConfigEntry
}

var orgConfigNotFound = failure{notFound: "org config key not found"}

func (s *Server) registerOrgConfig() {
	o := op("set-org-config", http.MethodPost, "/org-config", "Store or update an encrypted org config value", "Org config")
	o.Description = "Encrypts `value` (AES-256-GCM, bound to the organization and the key) and stores it under `key`, " +
		"replacing any value the key had: 201 when the key is new, 200 when it is updated. " +
		"The answer shows the value masked; no route ever returns it in plaintext. " +
		"Executions read it through `orgconfig:<key>` references."
	o.DefaultStatus = http.StatusCreated
	o.Responses = map[string]*huma.Response{"200": {Description: "The key existed: its value was replaced."}}
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusServiceUnavailable}
	o.Metadata = map[string]any{secretsMetadata: true}
	register(s, o, failure{}, s.setOrgConfig)
	// The 200 of an update has the body of the 201.
	if ops := s.api.OpenAPI().Paths["/org-config"]; ops != nil && ops.Post != nil {
		if ok, created := ops.Post.Responses["200"], ops.Post.Responses["201"]; ok != nil && created != nil {
			ok.Content = created.Content
		}
	}

	o = op("list-org-config", http.MethodGet, "/org-config", "List the organization's org config keys, values masked", "Org config")
	o.Description = "Every key by name, each value masked, a page at a time like every list."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusServiceUnavailable}
	register(s, o, failure{in: "query"}, s.listOrgConfig)

	o = op("delete-org-config", http.MethodDelete, "/org-config/{configKey}", "Delete an org config key and its value", "Org config")
	o.Description = "The key goes in the path as it is (`/org-config/api:llm_api_key`); a key holding `/` is " +
		"written with `%2F`. 404 when the organization has no such key."
	o.DefaultStatus = http.StatusNoContent
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, orgConfigNotFound, s.deleteOrgConfig)
}

type setOrgConfigInput struct {
	OrgParam
	Body OrgConfigBody
}

func (s *Server) setOrgConfig(ctx context.Context, in *setOrgConfigInput) (*orgConfigOutput, error) {
	e, created, err := s.eng.OrgConfig.SetOrgConfig(ctx, in.OrgID, in.Body.Key, in.Body.Value)
	if err != nil {
		return nil, err
	}
	out := &orgConfigOutput{Status: http.StatusOK, Body: orgConfigEntry(*e)}
	if created {
		out.Status = http.StatusCreated
	}
	return out, nil
}

type listOrgConfigInput struct {
	OrgParam
	Paging
}

func (s *Server) listOrgConfig(ctx context.Context, in *listOrgConfigInput) (*answer[List[OrgConfigEntry]], error) {
	page, err := s.eng.OrgConfig.ListOrgConfig(ctx, in.OrgID, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[OrgConfigEntry]]{Body: listOf(page, orgConfigEntry)}, nil
}

type deleteOrgConfigInput struct {
	OrgParam
	ConfigKey string `path:"configKey" doc:"Key name, URL-escaped where needed."`
}

func (s *Server) deleteOrgConfig(ctx context.Context, in *deleteOrgConfigInput) (*struct{}, error) {
	if err := s.eng.OrgConfig.DeleteOrgConfig(ctx, in.OrgID, in.ConfigKey); err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}
