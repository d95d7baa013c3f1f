package gateway

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/runtime"
)

// An organization's people, as its backend describes them to the gateway: the approver
// roles each holds (spec section 5, rule 5). The SDK session of a person reads them on
// every request, so a change applies at once.

// UserPath names a person of an organization.
type UserPath struct {
	OrgPath
	Email string `path:"email" maxLength:"254" doc:"The person's email, as they sign in with it."`
}

var roleOK = func(r string) bool { return r != "" && len(r) <= 100 && strings.TrimSpace(r) == r }

func (s *Server) registerPeople() {
	o := huma.Operation{OperationID: "list-org-users", Method: http.MethodGet, Path: "/gateway/orgs/{orgId}/users",
		Summary: "An organization's people and their approver roles", Tags: []string{"People"}}
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		OrgPath
		Limit  int    `query:"limit" default:"50" minimum:"1" maximum:"500"`
		Cursor string `query:"cursor"`
	}) (*struct{ Body runtime.List[svctype.OrgUser] }, error) {
		if _, err := s.ownOrg(ctx, in.OrgPath); err != nil {
			return nil, s.fail(ctx, err, "organization not found")
		}
		page, err := s.store.ListOrgUsers(ctx, in.OrgID, svctype.ListOptions{Limit: in.Limit, Cursor: in.Cursor})
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return &struct{ Body runtime.List[svctype.OrgUser] }{Body: runtime.List[svctype.OrgUser]{Items: page.Items, NextCursor: page.NextCursor}}, nil
	})

	o = huma.Operation{OperationID: "put-org-user", Method: http.MethodPut, Path: "/gateway/orgs/{orgId}/users/{email}",
		Summary: "Set a person's approver roles", Tags: []string{"People"}, MaxBodyBytes: 1 << 16,
		Description: "The roles replace the person's earlier ones; a signed-in person whose approver_roles include an approval's " +
			"approver_role may decide it (POST /sdk/tasks/{taskId}/decide). Applies to open sessions at once."}
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		UserPath
		Body struct {
			ApproverRoles []string `json:"approver_roles" maxItems:"100"`
		}
	}) (*struct{ Body svctype.OrgUser }, error) {
		if _, err := s.ownOrg(ctx, in.OrgPath); err != nil {
			return nil, s.fail(ctx, err, "organization not found")
		}
		email, ok := normalEmail(in.Email)
		if !ok {
			return nil, newProblem(http.StatusUnprocessableEntity, "validation_failed", "the path's email is not an email address")
		}
		roles := []string{}
		for i, r := range in.Body.ApproverRoles {
			if !roleOK(r) {
				return nil, invalid("/approver_roles/"+strconv.Itoa(i), "a role: 1 to 100 characters, no surrounding spaces")
			}
			if !slices.Contains(roles, r) {
				roles = append(roles, r)
			}
		}
		u := &svctype.OrgUser{OrgID: in.OrgID, Email: email, ApproverRoles: roles, UpdatedAt: s.now().UTC()}
		if err := s.store.PutOrgUser(ctx, u); err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return &struct{ Body svctype.OrgUser }{Body: *u}, nil
	})

	o = huma.Operation{OperationID: "delete-org-user", Method: http.MethodDelete, Path: "/gateway/orgs/{orgId}/users/{email}",
		Summary: "Remove a person's approver roles", Tags: []string{"People"}, DefaultStatus: http.StatusNoContent}
	huma.Register(s.api, o, func(ctx context.Context, in *UserPath) (*struct{}, error) {
		if _, err := s.ownOrg(ctx, in.OrgPath); err != nil {
			return nil, s.fail(ctx, err, "organization not found")
		}
		email, _ := normalEmail(in.Email)
		if err := s.store.DeleteOrgUser(ctx, in.OrgID, email); err != nil {
			return nil, s.fail(ctx, err, "person not found")
		}
		return &struct{}{}, nil
	})
}
