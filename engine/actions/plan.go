package actions

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/svctype"
)

// planCalls describes the outside call of a step that runs one of the organization's
// actions (core.CallPlanner): an http action's method and host, a db action's database, an
// llm action's model call; custom-table and nway_match actions call nothing outside.
func (e *Actions) planCalls(ctx context.Context, orgID string, step *svctype.Step) ([]svctype.PlannedCall, bool, error) {
	if _, builtin := e.core.Environment().Lookup(step.Type); builtin {
		return nil, false, nil
	}
	a, err := e.LookupAction(ctx, orgID, step.Type)
	if errors.Is(err, core.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	switch a.Kind {
	case svctype.ActionHTTP:
		method := a.HTTPMethod
		if method == "" {
			method = "POST"
		}
		return []svctype.PlannedCall{{Kind: "http", Method: strings.ToUpper(method), Host: targetHost(a.URL), Detail: a.Name}}, true, nil
	case svctype.ActionDB:
		return []svctype.PlannedCall{{Kind: "database", Detail: a.Name}}, true, nil
	case svctype.ActionLLM:
		return []svctype.PlannedCall{{Kind: "model", Detail: a.Name}}, true, nil
	}
	return []svctype.PlannedCall{}, true, nil
}

// targetHost is the host of an action's URL, or the URL as written when it is a reference
// (orgconfig:<key>) or a template.
func targetHost(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" && !strings.Contains(raw, "{{") {
		return u.Host
	}
	return raw
}
