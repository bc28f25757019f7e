package workspace

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"io/fs"
	"sort"
)

// Overlay is a copy of a workspace's overlay (both trees, with their
// whiteouts), detached from the run that wrote it: a session carries it
// from one turn to the next, and saves it. Its JSON form is part of a
// saved session.
type Overlay struct {
	Workspace OverlayTree `json:"workspace"`
	Tmp       OverlayTree `json:"tmp"`
}

// OverlayTree is one tree of an Overlay.
type OverlayTree struct {
	Nodes []OverlayNode `json:"nodes"`
	Gone  []string      `json:"gone"` // stable paths removed or renamed away
}

// OverlayNode is an overlay file or directory.
type OverlayNode struct {
	Path  string      `json:"path"`
	Dir   bool        `json:"dir,omitempty"`
	Data  []byte      `json:"data,omitempty"`
	Mode  fs.FileMode `json:"mode"`
	Mtime int64       `json:"mtime"`
}

// Size is the bytes an Overlay's files hold.
func (o *Overlay) Size() int64 {
	var n int64
	for _, t := range []OverlayTree{o.Workspace, o.Tmp} {
		for _, nd := range t.Nodes {
			n += int64(len(nd.Data))
		}
	}
	return n
}

// Hash writes the overlay to h canonically: equal overlays write the same
// bytes, however they were made or decoded.
func (o *Overlay) Hash(h hash.Hash) {
	var b []byte
	for _, t := range []OverlayTree{o.Workspace, o.Tmp} {
		b = binary.LittleEndian.AppendUint32(b[:0], uint32(len(t.Nodes)))
		h.Write(b)
		for _, n := range t.Nodes {
			sum := sha256.Sum256(n.Data)
			b = binary.LittleEndian.AppendUint32(b[:0], uint32(len(n.Path)))
			b = append(b, n.Path...)
			b = append(b, boolByte(n.Dir))
			b = binary.LittleEndian.AppendUint32(b, uint32(n.Mode))
			b = binary.LittleEndian.AppendUint64(b, uint64(n.Mtime))
			h.Write(append(b, sum[:]...))
		}
		b = binary.LittleEndian.AppendUint32(b[:0], uint32(len(t.Gone)))
		h.Write(b)
		for _, g := range t.Gone {
			b = binary.LittleEndian.AppendUint32(b[:0], uint32(len(g)))
			h.Write(append(b, g...))
		}
	}
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// Overlay copies the workspace's overlay as it is now. Files the guest
// still holds open but has removed are left out, as a reboot would.
func (w *Workspace) Overlay() *Overlay {
	w.mu.Lock()
	defer w.mu.Unlock()
	return &Overlay{Workspace: w.ws.save(), Tmp: w.tmp.save()}
}

func (t *tree) save() OverlayTree {
	out := OverlayTree{Nodes: make([]OverlayNode, 0, len(t.nodes)), Gone: make([]string, 0, len(t.gone))}
	for p, n := range t.nodes {
		out.Nodes = append(out.Nodes, OverlayNode{Path: p, Dir: n.dir, Data: clone(n.data), Mode: n.mode, Mtime: n.mtime})
	}
	for p := range t.gone {
		out.Gone = append(out.Gone, p)
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Path < out.Nodes[j].Path })
	sort.Strings(out.Gone)
	return out
}

// Restore lays o over a workspace that has no overlay yet (one just made
// by New), within the workspace's limits: a saved overlay is input like
// any other, so a path that is not clean is refused.
func (w *Workspace) Restore(o *Overlay) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.ws.nodes)+len(w.tmp.nodes)+len(w.ws.gone)+len(w.tmp.gone) > 0 {
		return errors.New("wasmpy: workspace overlay restored twice")
	}
	for _, r := range []struct {
		t   *tree
		src OverlayTree
	}{{&w.ws, o.Workspace}, {&w.tmp, o.Tmp}} {
		if err := r.t.restore(r.src); err != nil {
			return err
		}
	}
	return nil
}

func (t *tree) restore(src OverlayTree) error {
	for _, p := range src.Gone {
		if c, err := cleanPath(p); err != nil || c != p || p == "." {
			return errors.New("wasmpy: saved overlay: bad whiteout path " + p)
		}
		t.gone[p] = struct{}{}
	}
	for _, sn := range src.Nodes { // sorted: parents come first
		if c, err := cleanPath(sn.Path); err != nil || c != sn.Path || c == "." {
			return errors.New("wasmpy: saved overlay: bad path " + sn.Path)
		}
		n := &node{dir: sn.Dir, mode: sn.Mode.Perm(), mtime: sn.Mtime}
		if !sn.Dir {
			if err := t.w.resize(n, int64(len(sn.Data))); err != nil {
				return err
			}
			copy(n.data, sn.Data)
		}
		if err := t.addNode(sn.Path, n); err != nil {
			return err
		}
	}
	return nil
}
