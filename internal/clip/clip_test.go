package clip

import "testing"

func TestHeadAndTail(t *testing.T) {
	for _, c := range []struct {
		fn   func(string, int) string
		in   string
		n    int
		want string
	}{
		{Head, "hello", 5, "hello"},
		{Head, "hello", 3, "hel…"},
		{Head, "héllo", 2, "h…"}, // é is two bytes: never cut inside it
		{Tail, "hello", 9, "hello"},
		{Tail, "hello", 2, "…lo"},
		{Tail, "hellé", 1, "…"},
	} {
		if got := c.fn(c.in, c.n); got != c.want {
			t.Errorf("%q, %d: got %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
