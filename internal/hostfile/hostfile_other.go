//go:build !unix

package hostfile

const oNonblock = 0
