// Package flame builds flame graphs from aggregated stacks and renders them
// as the data frames Grafana's flame graph panel and Explore expect, plus the
// "top functions" table.
//
// The caller interns frame labels in a [Names] table and feeds each distinct
// stack (labels root first, as ids) with its summed value to a [Tree] and,
// for the table, to [Functions]. Both work on int32 label ids only; strings
// are touched again only when rendering.
//
// [Tree.Frame] renders Grafana's nested-set layout: one row per node in
// depth-first pre-order with its level, total value, self value and label.
// Large trees are truncated the way Pyroscope does it, folding small
// children into one "other" child per parent, with a hard bound on the
// number of rows (see [Tree.Frame]).
//
// Nothing in this package is safe for concurrent use.
package flame
