package wasm

import (
	"io/fs"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// readOnlyFS refuses every change with EROFS, as a read-only mount does.
// (wazero's ReadFS answers an open for writing with ENOSYS, which Python
// reports as "function not implemented".)
type readOnlyFS struct{ sysfs.ReadFS }

func (r *readOnlyFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	const writing = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT |
		experimentalsys.O_TRUNC | experimentalsys.O_APPEND
	if flag&writing != 0 {
		if flag&experimentalsys.O_DIRECTORY != 0 {
			return nil, experimentalsys.EISDIR
		}
		return nil, experimentalsys.EROFS
	}
	return r.ReadFS.OpenFile(path, flag, perm)
}
