package svctype_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/svctype"
)

func TestWebhookFilterMatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		filter *svctype.WebhookFilter
		tags   []string
		ct     string
		want   bool
	}{
		{"no filter", nil, nil, "", true},
		{"empty filter", &svctype.WebhookFilter{}, []string{"a"}, "text/csv", true},
		{"one of the tags", &svctype.WebhookFilter{Tags: []string{"invoices", "receipts"}}, []string{"2026", "receipts"}, "", true},
		{"none of the tags", &svctype.WebhookFilter{Tags: []string{"invoices"}}, []string{"Invoices"}, "", false},
		{"no tags at all", &svctype.WebhookFilter{Tags: []string{"invoices"}}, nil, "text/csv", false},
		{"content type", &svctype.WebhookFilter{ContentType: "text/csv"}, nil, "text/csv", true},
		{"content type with parameters and case", &svctype.WebhookFilter{ContentType: "text/csv"}, nil, "Text/CSV; charset=utf-8", true},
		{"other content type", &svctype.WebhookFilter{ContentType: "text/csv"}, nil, "application/json", false},
		{"wildcard", &svctype.WebhookFilter{ContentType: "text/*"}, nil, "text/plain", true},
		{"wildcard, other type", &svctype.WebhookFilter{ContentType: "text/*"}, nil, "application/text", false},
		{"both must pass", &svctype.WebhookFilter{Tags: []string{"a"}, ContentType: "text/csv"}, []string{"a"}, "application/json", false},
		{"both pass", &svctype.WebhookFilter{Tags: []string{"a"}, ContentType: "text/csv"}, []string{"a"}, "text/csv", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.filter.Matches(tt.tags, tt.ct))
		})
	}
}

func TestMergeAutoPayload(t *testing.T) {
	t.Parallel()
	payload := map[string]any{"run_id": "run-1", "workflow_id": "wfl-1"}
	auto := map[string]any{"run_id": "spoofed", "env": "prod"}
	got := svctype.MergeAutoPayload(payload, auto)
	require.Equal(t, map[string]any{"run_id": "run-1", "workflow_id": "wfl-1", "env": "prod"}, got, "the event's own fields win")
	require.Equal(t, map[string]any{"run_id": "run-1", "workflow_id": "wfl-1"}, payload, "not modified")
	require.Equal(t, map[string]any{"run_id": "spoofed", "env": "prod"}, auto, "not modified")
	require.Equal(t, payload, svctype.MergeAutoPayload(payload, nil))
}
