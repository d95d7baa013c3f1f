package main

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/svcflow/svcflow/engine"
)

// envOAuthAPIURLs replaces the API base URLs the built-in OAuth tools call, for a test
// double of the providers' APIs or a proxy in front of them: "name=URL" pairs separated by
// commas, the names gmail, sheets, slack and graph (Microsoft Graph). An API not named keeps
// its real URL. Only this binary reads it; a program embedding the engine sets
// engine.OAuthOptions.APIs. A private or loopback address also needs --allow-private-targets.
const envOAuthAPIURLs = "SVC_OAUTH_API_URLS"

// oauthAPIs parses SVC_OAUTH_API_URLS ("" for none: the real APIs) and lists the names it set.
func oauthAPIs(v string) (engine.OAuthAPIs, []string, error) {
	var apis engine.OAuthAPIs
	fields := map[string]*string{"gmail": &apis.Gmail, "sheets": &apis.Sheets, "slack": &apis.Slack, "graph": &apis.Graph}
	var set []string
	for i, pair := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		name, raw, ok := strings.Cut(pair, "=")
		field, known := fields[name]
		if !ok || !known {
			names := make([]string, 0, len(fields))
			for n := range fields {
				names = append(names, n)
			}
			sort.Strings(names)
			return apis, nil, fmt.Errorf("%s: entry %d is not name=URL with a name of %s", envOAuthAPIURLs, i+1, strings.Join(names, ", "))
		}
		if *field != "" {
			return apis, nil, fmt.Errorf("%s: %s is given twice", envOAuthAPIURLs, name)
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return apis, nil, fmt.Errorf("%s: %s must be an http(s) base URL without credentials, query or fragment", envOAuthAPIURLs, name)
		}
		*field = strings.TrimSuffix(raw, "/")
		set = append(set, name)
	}
	return apis, set, nil
}
