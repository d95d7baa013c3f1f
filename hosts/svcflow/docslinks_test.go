package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
	htmlAnchor = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
	headingRe  = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	slugDrop   = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// mdAnchors are the anchors GitHub makes for a page's headings (lower case, punctuation
// dropped, spaces as hyphens, a repeated heading suffixed -1, -2…) and its <a id>s.
func mdAnchors(text string) map[string]bool {
	anchors, seen := map[string]bool{}, map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := headingRe.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		h := strings.ReplaceAll(m[1], "`", "")
		h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1") // a link's text
		slug := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// mdLinks are a page's relative link targets outside code, with their line.
func mdLinks(text string) (links []string, lines []int) {
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			if t := m[1]; !strings.Contains(t, "://") && !strings.HasPrefix(t, "mailto:") {
				links, lines = append(links, t), append(lines, i+1)
			}
		}
	}
	return links, lines
}

// TestDocsLinksResolve: every relative link of README.md and docs/*.md names a file that
// exists and, with a #fragment into a Markdown page, a heading (or <a id>) of that page.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	pages = append(pages, filepath.Join(root, "README.md"))
	texts := map[string]string{}
	read := func(p string) (string, bool) {
		p = filepath.Clean(p)
		if s, ok := texts[p]; ok {
			return s, true
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", false
		}
		texts[p] = string(b)
		return texts[p], true
	}
	checked := 0
	for _, page := range pages {
		text, ok := read(page)
		require.True(t, ok)
		links, lines := mdLinks(text)
		for i, link := range links {
			where := fmt.Sprintf("%s:%d: %s", filepath.ToSlash(page[len(root)+1:]), lines[i], link)
			target, frag, _ := strings.Cut(link, "#")
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), target)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: no such file", where)
					continue
				}
			}
			checked++
			if frag == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			body, _ := read(file)
			if !mdAnchors(body)[frag] {
				t.Errorf("%s: no heading #%s there", where, frag)
			}
		}
	}
	require.Greater(t, checked, 50, "the pages link to each other")
}

// TestMarkdownAnchorsAsGitHubMakesThem pins the slugs the link check expects.
func TestMarkdownAnchorsAsGitHubMakesThem(t *testing.T) {
	t.Parallel()
	a := mdAnchors("# A five-minute tour\n## Health and operations (issue 21)\n### `svcflow serve`: the binary\n" +
		"## Notes\n## Notes\n```sh\n# not a heading\n```\n<a id=\"custom\"></a>\n")
	for _, want := range []string{"a-five-minute-tour", "health-and-operations-issue-21", "svcflow-serve-the-binary", "notes", "notes-1", "custom"} {
		require.True(t, a[want], "%s in %v", want, a)
	}
	require.False(t, a["not-a-heading"])
	links, _ := mdLinks("see [a](docs/a.md#x) and `[b](nope.md)` and [c](https://x.org/y)\n```\n[d](e.md)\n```\n")
	require.Equal(t, []string{"docs/a.md#x"}, links)
}
