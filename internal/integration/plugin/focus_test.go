package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/querytest"
)

// pathRows indexes flame graph rows by their label path from the root's
// children ("a;b;c"), "other" rows by their parent's path plus ";other".
func pathRows(rows []querytest.FlameRow) map[string]querytest.FlameRow {
	out := map[string]querytest.FlameRow{}
	var path []string
	for _, r := range rows[1:] {
		path = append(path[:r.Level-1], r.Label)
		out[strings.Join(path, ";")] = r
	}
	return out
}

// smallestFoldedParent is the path of the node below the root, with an
// "other" child in the truncated rows (plain), whose subtree in the
// untruncated rows (full) is the smallest of at least two nodes, and that
// size.
func smallestFoldedParent(full, plain map[string]querytest.FlameRow) (parent string, smallest int) {
	size := func(p string) int {
		n := 0
		for path := range full {
			if strings.HasPrefix(path, p+";") {
				n++
			}
		}
		return n
	}
	for path, r := range plain {
		if r.Label != "other" || !strings.Contains(path, ";") {
			continue
		}
		p := strings.TrimSuffix(path, ";other")
		if n := size(p); n >= 2 && (smallest == 0 || n < smallest) {
			parent, smallest = p, n
		}
	}
	return parent, smallest
}

// TestFocusPathOpensOther truncates a real ingest's flame graph, opens its
// largest "other" row with focusPath, and checks the answer against the
// untruncated flame graph: every row's value equals the node's, the opened
// node shows more of its children within its own budget, the rest of the
// graph is as it was, the totals exact.
func TestFocusPathOpensOther(t *testing.T) {
	f := newFixture(t, nil)
	at := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	req, _ := plugintest.Report(t, at)
	f.send(t, req)
	from, to := at.Add(-time.Minute), at.Add(time.Hour)
	query := func(q map[string]any) []querytest.FlameRow {
		q["profileTypeId"] = plugintest.CPUType
		return querytest.FlameRows(t, plugintest.RequireOK(t, f.query(t, q, from, to))[0], "ns")
	}
	full := pathRows(query(map[string]any{"maxNodes": 1 << 20}))
	const budget = 60
	plainRows := query(map[string]any{"maxNodes": budget})
	plain := pathRows(plainRows)
	// The "other" row whose parent has the smallest subtree: opened with a
	// budget of its own, it shows in full.
	parent, smallest := smallestFoldedParent(full, plain)
	require.NotEmpty(t, parent, "the truncated graph folds children below the root: %v", plainRows)
	require.Less(t, smallest, budget, "a subtree that fits the budget")

	focusedRows := query(map[string]any{"maxNodes": budget, "focusPath": append(strings.Split(parent, ";"), "other")})
	require.Equal(t, plainRows[0], focusedRows[0], "the root's total stays exact")
	focused := pathRows(focusedRows)
	below := func(path string) bool { return strings.HasPrefix(path, parent+";") }
	var subtree, shownBefore, shownNow int
	for path, r := range focused {
		if r.Label != "other" {
			require.Equal(t, full[path].Value, r.Value, "%s: the node's total", path)
			require.Equal(t, full[path].Self, r.Self, "%s: the node's self", path)
		}
		if below(path) {
			subtree++
			if !strings.Contains(strings.TrimPrefix(path, parent+";"), ";") && r.Label != "other" {
				shownNow++
			}
		}
	}
	for path, r := range plain {
		if below(path) {
			if !strings.Contains(strings.TrimPrefix(path, parent+";"), ";") && r.Label != "other" {
				shownBefore++
			}
			continue
		}
		if path == parent || strings.HasPrefix(parent, path+";") {
			continue // the path's nodes
		}
		require.Equal(t, r, focused[path], "%s: the rest of the graph is as it was", path)
	}
	require.Greater(t, shownNow, shownBefore, "the opened node shows more of its children")
	require.Equal(t, smallest, subtree, "the opened node's subtree in full: it fits a budget of its own")
	for path, r := range full {
		if below(path) {
			require.Equal(t, r, focused[path], "%s: as in the untruncated graph", path)
		}
	}

	resp := f.query(t, map[string]any{"profileTypeId": plugintest.CPUType, "maxNodes": budget, "focusPath": []string{"no such function"}}, from, to)
	frames := plugintest.RequireOK(t, resp)
	require.Equal(t, plainRows, querytest.FlameRows(t, frames[0], "ns"), "a path the answer does not have changes nothing")
	require.Len(t, frames[0].Meta.Notices, 1)
	require.Contains(t, frames[0].Meta.Notices[0].Text, "No stack goes through the focus path no such function")

	bad := f.query(t, map[string]any{"queryType": "table", "profileTypeId": plugintest.CPUType, "focusPath": []string{"main"}}, from, to)
	require.Error(t, bad.Error)
	require.Contains(t, bad.Error.Error(), "focusPath opens a node of a flame graph")
}
