package gateway

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
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

// person is who an email is in an organization, as its backend set it up.
type person struct {
	// MaySignIn: the organization lets the person sign in to its SDK.
	MaySignIn bool
	// Member: a person of the organization (added, or of a listed domain); a person who
	// may sign in and is no member is a guest (the organization lets anyone sign in).
	Member bool
	// Roles are the roles the backend gave the person (approvals they decide, form pauses
	// assigned to them).
	Roles []string
}

// person reads who email is in orgID: the people the organization added (with their
// roles), then its sign-in policy (its domains, or anyone).
func (s *Server) person(ctx context.Context, orgID, email string) (person, error) {
	u, err := s.store.GetOrgUser(ctx, orgID, email)
	if err == nil {
		return person{MaySignIn: true, Member: true, Roles: u.ApproverRoles}, nil
	}
	if !errors.Is(err, gwstore.ErrNotFound) {
		return person{}, err
	}
	pol, err := s.store.GetSignInPolicy(ctx, orgID)
	if errors.Is(err, gwstore.ErrNotFound) {
		return person{Roles: []string{}}, nil
	}
	if err != nil {
		return person{}, err
	}
	_, domain, _ := strings.Cut(email, "@")
	if slices.Contains(pol.Domains, domain) {
		return person{MaySignIn: true, Member: true, Roles: []string{}}, nil
	}
	return person{MaySignIn: pol.Anyone, Roles: []string{}}, nil
}

// domainOK is an email domain as a policy lists it: lower case, dotted, no @.
var domainOK = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$`)

var roleOK = func(r string) bool { return r != "" && len(r) <= 100 && strings.TrimSpace(r) == r }

func (s *Server) registerPeople() {
	o := huma.Operation{OperationID: "list-org-users", Method: http.MethodGet, Path: "/gateway/orgs/{orgId}/users",
		Summary: "The people an organization added, and their roles", Tags: []string{"People"}}
	huma.Register(s.api, s.accountRoute(managementOp(o, http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity)), func(ctx context.Context, in *struct {
		OrgPath
		Limit  int    `query:"limit" default:"50" minimum:"1" maximum:"500"`
		Cursor string `query:"cursor"`
	}) (*struct{ Body runtime.List[gwstore.OrgUser] }, error) {
		if _, err := s.ownOrg(ctx, in.OrgPath); err != nil {
			return nil, s.fail(ctx, err, "organization not found")
		}
		page, err := s.store.ListOrgUsers(ctx, in.OrgID, svctype.ListOptions{Limit: in.Limit, Cursor: in.Cursor})
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return &struct{ Body runtime.List[gwstore.OrgUser] }{Body: runtime.List[gwstore.OrgUser]{Items: page.Items, NextCursor: page.NextCursor}}, nil
	})

	o = huma.Operation{OperationID: "put-org-user", Method: http.MethodPut, Path: "/gateway/orgs/{orgId}/users/{email}",
		Summary: "Add a person, with their roles", Tags: []string{"People"}, MaxBodyBytes: 1 << 16,
		Description: "Adds the person to the organization (they may sign in to its SDK and work its tasks) or replaces their " +
			"roles. A signed-in person whose approver_roles include an approval's approver_role may decide it " +
			"(POST /sdk/tasks/{taskId}/decide), and one whose roles include a form pause's assignee_role may submit it. " +
			"Applies to open sessions at once."}
	huma.Register(s.api, s.accountRoute(managementOp(o, http.StatusNotFound, http.StatusUnprocessableEntity)), func(ctx context.Context, in *struct {
		UserPath
		Body struct {
			ApproverRoles []string `json:"approver_roles" maxItems:"100"`
		}
	}) (*struct{ Body gwstore.OrgUser }, error) {
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
		u := &gwstore.OrgUser{OrgID: in.OrgID, Email: email, ApproverRoles: roles, UpdatedAt: s.now().UTC()}
		if err := s.store.PutOrgUser(ctx, u); err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return &struct{ Body gwstore.OrgUser }{Body: *u}, nil
	})

	o = huma.Operation{OperationID: "get-org-signin-policy", Method: http.MethodGet, Path: "/gateway/orgs/{orgId}/sign-in",
		Summary: "Who may sign in to the organization's SDK", Tags: []string{"People"},
		Description: "The people the organization added (PUT /gateway/orgs/{orgId}/users/{email}) always may; also everyone of " +
			"the listed domains; or, with anyone, every mailbox (as a guest unless added or of a listed domain). " +
			"An organization that never set it admits its people only."}
	huma.Register(s.api, s.accountRoute(managementOp(o, http.StatusNotFound)), func(ctx context.Context, in *OrgPath) (*struct{ Body gwstore.SignInPolicy }, error) {
		if _, err := s.ownOrg(ctx, *in); err != nil {
			return nil, s.fail(ctx, err, "organization not found")
		}
		pol, err := s.store.GetSignInPolicy(ctx, in.OrgID)
		if errors.Is(err, gwstore.ErrNotFound) {
			pol, err = &gwstore.SignInPolicy{OrgID: in.OrgID, Domains: []string{}}, nil
		}
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return &struct{ Body gwstore.SignInPolicy }{Body: *pol}, nil
	})

	o = huma.Operation{OperationID: "put-org-signin-policy", Method: http.MethodPut, Path: "/gateway/orgs/{orgId}/sign-in",
		Summary: "Set who may sign in to the organization's SDK", Tags: []string{"People"}, MaxBodyBytes: 1 << 16,
		Description: "Replaces the policy. A person it no longer admits is signed out at their next request (401 session_ended). " +
			"anyone: true is for public portals: people neither added nor of a listed domain sign in as guests, who work no " +
			"tasks and read no submitted data."}
	huma.Register(s.api, s.accountRoute(managementOp(o, http.StatusNotFound, http.StatusUnprocessableEntity)), func(ctx context.Context, in *struct {
		OrgPath
		Body struct {
			Anyone  bool     `json:"anyone" required:"false" doc:"Let every mailbox sign in (as a guest unless added or of a listed domain)."`
			Domains []string `json:"domains" required:"false" maxItems:"100" doc:"Email domains whose people may sign in and work the organization's tasks, e.g. example.com."`
		}
	}) (*struct{ Body gwstore.SignInPolicy }, error) {
		if _, err := s.ownOrg(ctx, in.OrgPath); err != nil {
			return nil, s.fail(ctx, err, "organization not found")
		}
		domains := []string{}
		for i, d := range in.Body.Domains {
			d = strings.ToLower(d)
			if len(d) > 253 || !domainOK.MatchString(d) {
				return nil, invalid("/domains/"+strconv.Itoa(i), "an email domain such as example.com: no @, no scheme, no wildcard")
			}
			if !slices.Contains(domains, d) {
				domains = append(domains, d)
			}
		}
		pol := &gwstore.SignInPolicy{OrgID: in.OrgID, Anyone: in.Body.Anyone, Domains: domains, UpdatedAt: s.now().UTC()}
		if err := s.store.PutSignInPolicy(ctx, pol); err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return &struct{ Body gwstore.SignInPolicy }{Body: *pol}, nil
	})

	o = huma.Operation{OperationID: "delete-org-user", Method: http.MethodDelete, Path: "/gateway/orgs/{orgId}/users/{email}",
		Summary: "Remove a person", Tags: []string{"People"}, DefaultStatus: http.StatusNoContent,
		Description: "The person's roles go, and so does their sign-in unless the organization's policy still admits them " +
			"(their domain, or anyone): their open sessions end at their next request."}
	huma.Register(s.api, s.accountRoute(managementOp(o, http.StatusNotFound)), func(ctx context.Context, in *UserPath) (*struct{}, error) {
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
