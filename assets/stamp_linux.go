package assets

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// identity is what a stamp records of an open file; "" when unknown.
func identity(f *os.File) string {
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d:%d.%09d:%d.%09d", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
}

// changed is when f last changed (its inode's change time); zero when unknown.
func changed(f *os.File) time.Time {
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}
	}
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
}
