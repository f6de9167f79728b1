package tenancy

import "testing"

func TestMarkerRoundTrip(t *testing.T) {
	for _, tenant := range []string{"", "acme", "a'b", "flamehouse:tenant:x", "ünï"} {
		got, ok := FromMarker(Marker(tenant))
		if !ok || got != tenant {
			t.Errorf("FromMarker(Marker(%q)) = %q, %v", tenant, got, ok)
		}
	}
	for _, comment := range []string{"", "flamehouse grafana_user:admin", "flamehouse:all:abc", "flamehouse:tenant"} {
		if got, ok := FromMarker(comment); ok {
			t.Errorf("FromMarker(%q) = %q, true; want not a marker", comment, got)
		}
	}
}
