package flame

// Names interns frame labels: each distinct label gets a dense int32 id, in
// the order labels are first seen.
type Names struct {
	ids    map[string]int32
	labels []string
}

// NewNames returns an empty names table with room for size labels.
func NewNames(size int) *Names {
	return &Names{ids: make(map[string]int32, size), labels: make([]string, 0, size)}
}

// ID returns the id of label, interning it on first use.
func (n *Names) ID(label string) int32 {
	if id, ok := n.ids[label]; ok {
		return id
	}
	id := index32(len(n.labels))
	n.labels = append(n.labels, label)
	n.ids[label] = id
	return id
}

// Label returns the label of id, or "" when id was not handed out by n.
func (n *Names) Label(id int32) string {
	if !n.valid(id) {
		return ""
	}
	return n.labels[id]
}

// Lookup returns the id of label without interning it; false when the
// label was never interned.
func (n *Names) Lookup(label string) (int32, bool) {
	id, ok := n.ids[label]
	return id, ok
}

// count is the number of interned labels.
func (n *Names) count() int {
	return len(n.labels)
}

func (n *Names) valid(id int32) bool {
	return id >= 0 && int(id) < len(n.labels)
}
