package engine

// A session's next turn will start from the state its last turn left: the
// engine lays that state over a fresh instance as soon as the turn ends,
// so that the next turn finds its memory ready. It keeps such instances
// for the maxAhead states used last; a turn from any other state lays its
// own. Laying is the host's work only: no guest code runs ahead, since
// what a turn left (a rebound name, a hook) would run outside any limit;
// the runner starts inside the next turn (see parked.run).
const maxAhead = 8

type ahead struct {
	s *State
	c chan parkResult
}

// parkAhead lays an instance from s for a turn to come.
func (e *Engine) parkAhead(s *State) {
	c := make(chan parkResult, 1)
	e.aheadMu.Lock()
	defer e.aheadMu.Unlock()
	if e.aheadClosed {
		return
	}
	e.ahead = append(e.ahead, ahead{s: s, c: c})
	if len(e.ahead) > maxAhead {
		discard(e.ahead[0].c)
		e.ahead = e.ahead[1:]
	}
	e.starting.Add(1) // Close waits: the runtime must outlive the instance's start
	go func() {
		defer e.starting.Done()
		p, err := e.sessionInstance(s)
		c <- parkResult{p, err}
	}()
}

// takeAhead returns the instance laid ahead from s, if any.
func (e *Engine) takeAhead(s *State) (*parked, bool) {
	e.aheadMu.Lock()
	var c chan parkResult
	for i, a := range e.ahead {
		if a.s == s {
			c = a.c
			e.ahead = append(e.ahead[:i], e.ahead[i+1:]...)
			break
		}
	}
	e.aheadMu.Unlock()
	if c == nil {
		return nil, false
	}
	r := <-c
	return r.p, r.err == nil
}

// Forget discards the instance laid ahead from s, for a session that
// will not run again (closed, expired) or has moved on.
func (e *Engine) Forget(s *State) {
	e.aheadMu.Lock()
	defer e.aheadMu.Unlock()
	for i, a := range e.ahead {
		if a.s == s {
			discard(a.c)
			e.ahead = append(e.ahead[:i], e.ahead[i+1:]...)
			return
		}
	}
}

// stopAhead discards every instance laid ahead, when the engine closes,
// once each is made, and waits for every laying in progress (host work,
// bounded; some discarded already) to end.
func (e *Engine) stopAhead() {
	e.aheadMu.Lock()
	all := e.ahead
	e.ahead, e.aheadClosed = nil, true
	e.aheadMu.Unlock()
	defer e.starting.Wait()
	for _, a := range all {
		if r := <-a.c; r.p != nil {
			r.p.close()
		}
	}
}

// discard closes the instance c delivers, once it is made.
func discard(c chan parkResult) {
	go func() {
		if r := <-c; r.p != nil {
			r.p.close()
		}
	}()
}
