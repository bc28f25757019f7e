package engine

import (
	"bytes"
	"testing"
)

// pagesState is a state of the given pages, each filled with its byte.
func pagesState(t testing.TB, size uint64, fill map[uint32]byte, idx ...uint32) *State {
	t.Helper()
	var chunks [][]byte
	var pages []statePage
	for i, p := range idx {
		chunks = append(chunks, bytes.Repeat([]byte{fill[p]}, pageSize))
		pages = append(pages, statePage{idx: p, off: uint32(i)})
	}
	seg, err := newSegment(chunks)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pages {
		pages[i].seg = seg
	}
	return newState("k", size, pages)
}

// imageEngine is an engine whose image is pages of 0xaa, for deltas.
func imageEngine(pages int) *Engine {
	e := &Engine{key: "k"}
	e.baseOnce.Do(func() { e.base = bytes.Repeat([]byte{0xaa}, pages*pageSize) })
	return e
}

// TestDelta: a delta carries only the pages that differ, and applied to
// its base gives a state equal to the one it was made from; a delta that
// does not fit its base is refused.
func TestDelta(t *testing.T) {
	base := pagesState(t, 1<<20, map[uint32]byte{1: 1, 2: 2, 5: 5, 9: 9}, 1, 2, 5, 9)
	next := pagesState(t, 2<<20, map[uint32]byte{2: 20, 3: 3, 5: 5, 9: 9, 300: 7}, 2, 3, 5, 9, 300)
	e := imageEngine(4)
	d, err := e.MarshalDelta(next, base)
	if err != nil {
		t.Fatal(err)
	}
	if want := 16 + 8*3 + 3*pageSize; len(d) != want { // removed {1}; changed {2,3}, {300}
		t.Fatalf("delta of %d bytes, want %d", len(d), want)
	}
	got, err := e.ApplyDelta(base, d)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash() != next.Hash() || got.Bytes() != next.Bytes() {
		t.Fatal("the applied delta differs from the state it was made from")
	}
	from0, err := e.MarshalDelta(next, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.ApplyDelta(nil, from0); err != nil || got.Hash() != next.Hash() {
		t.Fatalf("from the image: %v", err)
	}
	if same, _ := e.MarshalDelta(next, got); len(same) != 16 {
		t.Fatalf("equal states: a delta of %d bytes", len(same))
	}

	other := pagesState(t, 1<<20, map[uint32]byte{4: 4}, 4) // lacks page 1, which d removes
	for name, c := range map[string]struct {
		base *State
		b    []byte
	}{
		"wrong base": {other, d},
		"truncated":  {base, d[:len(d)-1]},
		"short":      {base, d[:10]},
		"shrinks":    {next, func() []byte { b, _ := e.MarshalDelta(base, nil); return b }()},
		"out of order": {base, func() []byte {
			b := bytes.Clone(d) // the changed runs swapped: 300 before 2
			copy(b[24:], append(bytes.Clone(d[32:40]), d[24:32]...))
			return b
		}()},
	} {
		if _, err := e.ApplyDelta(c.base, c.b); err == nil {
			t.Errorf("%s: applied", name)
		}
	}
}

func FuzzApplyDelta(f *testing.F) {
	base := pagesState(f, 1<<20, map[uint32]byte{1: 1, 2: 2}, 1, 2)
	next := pagesState(f, 1<<20, map[uint32]byte{2: 3, 7: 7}, 2, 7)
	e := imageEngine(4)
	d, _ := e.MarshalDelta(next, base)
	f.Add(d)
	f.Add(d[:24])
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := e.ApplyDelta(base, b); err == nil {
			s.Hash()
		}
	})
}
