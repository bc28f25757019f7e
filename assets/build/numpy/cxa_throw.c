/* C++ throws without unwinding. Debian's libc++abi for wasm32 is built
 * without exceptions, and wasm32-wasi has no exception handling here, so a
 * throw (pocketfft's bad_alloc or bad arguments, libc++'s length_error) cannot
 * reach a catch: say so on stderr and trap, which ends the run with a
 * classified error and leaves the host alone. */
#include <stdio.h>
#include <stdlib.h>

void *__cxa_allocate_exception(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		abort();
	return p;
}

void __cxa_free_exception(void *p) { free(p); }

_Noreturn void __cxa_throw(void *obj, void *tinfo, void (*dest)(void *))
{
	(void)obj;
	(void)tinfo;
	(void)dest;
	fputs("wasmpy: a C++ exception was thrown inside an extension module; "
	      "wasm32-wasi cannot unwind it, so the run ends here\n", stderr);
	fflush(stderr);
	abort();
}

/* pandas' window/aggregations (C++, Cython's `except +`) rethrows in its
 * catch blocks, which cannot run here either. */
_Noreturn void __cxa_rethrow(void)
{
	fputs("wasmpy: a C++ exception was rethrown inside an extension module; "
	      "wasm32-wasi cannot unwind it, so the run ends here\n", stderr);
	fflush(stderr);
	abort();
}
