package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
	"github.com/wasmpy/wasmpy/skills"
)

// recording is the provenance record of one CLI run (--record): begun
// before the run, finished after, in the --db store.
type recording struct {
	st  stores.Store
	rec *provenance.Record
}

// startRecording opens the store and begins the record of job, of kind. The inputs
// hash covers the arguments only: stdin may be a terminal, streamed.
func startRecording(c *cli.Context, sb *wasmpy.Sandbox, cfg wasmpy.Config, kind string, job wasmpy.Job) (*recording, error) {
	st, err := openStore(c)
	if err != nil {
		return nil, err
	}
	args := job.Args
	if args == nil {
		args = []string{}
	}
	in, _ := json.Marshal(map[string]any{"args": args})
	inputs, err := provenance.Hash(in)
	if err != nil {
		st.Close()
		return nil, &exitError{code: exitWasmpy, msg: fmt.Sprintf("--record: %v", err)}
	}
	code := job.Code
	if job.Module != "" {
		code = "-m " + job.Module
	}
	rec := skills.NewRecord(sb, kind, job.Limits.Or(cfg.Limits).Or(wasmpy.DefaultLimits()))
	rec.ActorID, rec.ActorType = os.Getenv("USER"), "cli"
	rec.CodeHash, rec.InputsHash = provenance.HashBytes([]byte(code)), inputs
	if err := st.Begin(c.Context, rec); err != nil {
		st.Close()
		return nil, &exitError{code: exitWasmpy, msg: "--record: " + oneLine(err)}
	}
	return &recording{st: st, rec: rec}, nil
}

// finish completes the record with how the run went.
func (r *recording) finish(ctx context.Context, res *wasmpy.Result, runErr error) error {
	skills.CompleteRecord(ctx, r.rec, res, runErr)
	if err := r.st.Finish(context.WithoutCancel(ctx), r.rec); err != nil {
		return &exitError{code: exitWasmpy, msg: "--record: " + oneLine(err)}
	}
	return nil
}

func (r *recording) close() { r.st.Close() }
