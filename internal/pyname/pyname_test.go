package pyname

import "testing"

func TestIsIdentifier(t *testing.T) {
	for s, want := range map[string]bool{
		"ask_llm": true, "_x1": true, "A": true,
		"": false, "1a": false, "a-b": false, "a.b": false, "é": false, "if": false, "None": false,
		string(make([]byte, 129)): false,
	} {
		if got := IsIdentifier(s); got != want {
			t.Errorf("IsIdentifier(%q) = %v, want %v", s, got, want)
		}
	}
}
