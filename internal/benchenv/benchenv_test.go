package benchenv

import "testing"

func TestIntReadsTheEnvironment(t *testing.T) {
	t.Setenv("FLAMEHOUSE_TEST_KNOB", "")
	if got := Int(t, "FLAMEHOUSE_TEST_KNOB", 7); got != 7 {
		t.Fatalf("unset: got %d, want the default 7", got)
	}
	t.Setenv("FLAMEHOUSE_TEST_KNOB", "42")
	if got := Int(t, "FLAMEHOUSE_TEST_KNOB", 7); got != 42 {
		t.Fatalf("set: got %d, want 42", got)
	}
}
