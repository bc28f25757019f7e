//go:build unix

package hostfile

import "syscall"

// oNonblock opens a FIFO without waiting for a writer; on a regular file
// it changes nothing.
const oNonblock = syscall.O_NONBLOCK
