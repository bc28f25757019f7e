package main

import (
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/hostfuncs"
)

// allowHTTPFlag grants http_request, for the hosts it names.
var allowHTTPFlag = &cli.StringSliceFlag{Name: "allow-http",
	Usage: "let the script make HTTP requests (urllib.request, requests, http_request) to `HOST`: " +
		"api.example.com, *.example.com, either with :PORT; repeatable. Private, loopback and link-local " +
		"addresses only when named (127.0.0.1:8080, localhost)"}

// withHTTP grants job http_request when --allow-http names hosts: the
// user's own grant for this run, which no tier gives by default.
func withHTTP(c *cli.Context, job wasmpy.Job) (wasmpy.Job, error) {
	hosts := c.StringSlice("allow-http")
	if len(hosts) == 0 {
		return job, nil
	}
	for _, h := range hosts {
		if err := hostfuncs.ParseHostPattern(h); err != nil {
			return job, usageErr("--allow-http: %v", err)
		}
	}
	job.HTTP = &hostfuncs.HTTPPolicy{Hosts: slices.Clone(hosts)}
	if !slices.Contains(job.Grants, wasmpy.HTTPRequest) {
		job.Grants = append(slices.Clone(job.Grants), wasmpy.HTTPRequest)
	}
	return job, nil
}
