/*
 * _wasmpy: the guest half of wasmpy's one host-call transport.
 *
 * Python code calls _wasmpy.call(request: bytes-like) -> bytes. The request
 * bytes are opaque here; framing and encoding belong to the Python prelude
 * and to the Go host.
 *
 * ABI (two functions imported from the wasm module "wasmpy"):
 *
 *   uint32_t call(const void *req, uint32_t req_len)
 *       The host runs the request once and keeps the response. Returns the
 *       response length, or 0xFFFFFFFF when the transport failed.
 *
 *   uint32_t take(void *out, uint32_t len)
 *       The host copies its pending response (exactly len bytes, the length
 *       call returned) into out and returns the number of bytes copied.
 *
 * The response buffer is the bytes object itself, allocated with the size
 * call reported, so responses of any size need no retry and no copy.
 * There are no threads in the guest, so the GIL is not released.
 */
#include "Python.h"

#include <stdint.h>

#define WASMPY_CALL_FAILED UINT32_MAX

__attribute__((import_module("wasmpy"), import_name("call")))
extern uint32_t wasmpy_host_call(const void *req, uint32_t req_len);

__attribute__((import_module("wasmpy"), import_name("take")))
extern uint32_t wasmpy_host_take(void *out, uint32_t len);

PyDoc_STRVAR(wasmpy_call_doc,
"call(request, /)\n"
"--\n"
"\n"
"Send request (a bytes-like object) to the host and return its response\n"
"as bytes. Raises RuntimeError when the host transport fails.");

static PyObject *
wasmpy_call(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    PyObject *res = NULL;
    uint32_t n, got;

    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if ((size_t)view.len > (size_t)(UINT32_MAX - 1)) {
        PyErr_SetString(PyExc_OverflowError, "wasmpy request too large");
        goto done;
    }

    n = wasmpy_host_call(view.buf, (uint32_t)view.len);
    if (n == WASMPY_CALL_FAILED) {
        PyErr_SetString(PyExc_RuntimeError, "wasmpy host call failed");
        goto done;
    }
    if ((size_t)n > (size_t)PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_MemoryError, "wasmpy response too large");
        goto done;
    }

    /* On allocation failure the host keeps the pending response; the next
       call replaces it. */
    res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (res == NULL) {
        goto done;
    }
    /* Always paired with call, even for an empty response, so the host can
       drop its pending response here. */
    got = wasmpy_host_take(PyBytes_AS_STRING(res), n);
    if (got != n) {
        Py_CLEAR(res);
        PyErr_Format(PyExc_RuntimeError,
                     "wasmpy host returned %lu of %lu response bytes",
                     (unsigned long)got, (unsigned long)n);
    }

done:
    PyBuffer_Release(&view);
    return res;
}

static PyMethodDef wasmpy_methods[] = {
    {"call", wasmpy_call, METH_O, wasmpy_call_doc},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot wasmpy_slots[] = {
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
    {0, NULL},
};

PyDoc_STRVAR(wasmpy_doc,
"Low-level bridge to the wasmpy host. Use the wasmpy module instead.");

static struct PyModuleDef wasmpy_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_wasmpy",
    .m_doc = wasmpy_doc,
    .m_size = 0,
    .m_methods = wasmpy_methods,
    .m_slots = wasmpy_slots,
};

PyMODINIT_FUNC
PyInit__wasmpy(void)
{
    return PyModuleDef_Init(&wasmpy_module);
}
