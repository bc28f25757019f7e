/*
 * _wasmpy: the guest half of wasmpy's one host-call transport.
 *
 * Python code calls _wasmpy.call(fn, args, data=None) -> (kind, body):
 * fn names the capability (str), args is its keyword arguments already
 * encoded as a JSON object (str; "" for none), data is raw bytes attached
 * to the call (a bytes-like object, or None for none). Nothing is framed or
 * encoded here: each part goes to the host as it lies in memory.
 *
 * ABI (two functions imported from the wasm module "wasmpy"; the Go side
 * is wasm/hostcall.go):
 *
 *   uint32_t call(const char *fn, uint32_t fn_len,
 *                 const char *args, uint32_t args_len,
 *                 const void *data, uint32_t data_len)
 *       The host runs the request once and keeps the response. data_len is
 *       WASMPY_NO_DATA when the call carries no data. Returns the length of
 *       the response's body, or WASMPY_FAILED when the transport failed.
 *
 *   uint32_t take(void *out, uint32_t len)
 *       The host copies its pending response's body (exactly len bytes, the
 *       length call returned) into out and returns the body's kind, or
 *       WASMPY_FAILED.
 *
 * Kinds: 0 a JSON value, 1 raw bytes, 2 UTF-8 text, 3 a JSON error object
 * {"type": ..., "message": ...}. Raw bytes come back as bytes (the buffer
 * is the bytes object itself: no copy); the others as str, decoded here.
 * There are no threads in the guest, so the GIL is not released.
 */
#include "Python.h"

#include <stdint.h>

#define WASMPY_FAILED UINT32_MAX
#define WASMPY_NO_DATA UINT32_MAX
/* The host refuses more; this keeps every length below both sentinels. */
#define WASMPY_MAX_LEN ((Py_ssize_t)1 << 30)

enum { KIND_JSON = 0, KIND_BYTES = 1, KIND_TEXT = 2, KIND_ERROR = 3 };

__attribute__((import_module("wasmpy"), import_name("call")))
extern uint32_t wasmpy_host_call(const char *fn, uint32_t fn_len,
                                 const char *args, uint32_t args_len,
                                 const void *data, uint32_t data_len);

__attribute__((import_module("wasmpy"), import_name("take")))
extern uint32_t wasmpy_host_take(void *out, uint32_t len);

PyDoc_STRVAR(wasmpy_call_doc,
"call(fn, args, data=None, /)\n"
"--\n"
"\n"
"Call host capability fn (str) with args (a JSON object as str, or \"\")\n"
"and data (bytes-like or None). Returns (kind, body): kind 0 a JSON value\n"
"(body str), 1 bytes (body bytes), 2 text (body str), 3 a JSON error\n"
"object (body str). Raises RuntimeError when the host transport fails.");

/* take_body: the pending response of n bytes as the object its kind asks
   for; NULL with an exception set on failure. */
static PyObject *
take_body(uint32_t n, uint32_t *kind)
{
    PyObject *res;
    char *buf;

    /* On allocation failure the host keeps the pending response; the next
       call replaces it. */
    res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (res == NULL) {
        return NULL;
    }
    buf = PyBytes_AS_STRING(res);
    /* Always paired with call, even for an empty body, so the host can drop
       its pending response here. */
    *kind = wasmpy_host_take(buf, n);
    switch (*kind) {
    case KIND_BYTES:
        return res;
    case KIND_JSON:
    case KIND_TEXT:
    case KIND_ERROR: {
        PyObject *s = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)n, "strict");
        Py_DECREF(res);
        return s;
    }
    default:
        Py_DECREF(res);
        if (*kind == WASMPY_FAILED) {
            PyErr_SetString(PyExc_RuntimeError, "wasmpy host call failed to return its response");
        } else {
            PyErr_Format(PyExc_RuntimeError, "wasmpy host returned a response of unknown kind %lu",
                         (unsigned long)*kind);
        }
        return NULL;
    }
}

static PyObject *
wasmpy_call(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    Py_buffer view = {0};
    const char *fn, *args;
    Py_ssize_t fn_len, args_len;
    const void *data = NULL;
    uint32_t data_len = WASMPY_NO_DATA, n, kind;
    PyObject *body, *res = NULL;

    if (argc < 2 || argc > 3) {
        PyErr_Format(PyExc_TypeError, "call() takes 2 or 3 arguments (%zd given)", argc);
        return NULL;
    }
    if (!PyUnicode_Check(argv[0]) || !PyUnicode_Check(argv[1])) {
        PyErr_SetString(PyExc_TypeError, "call() wants fn and args as str");
        return NULL;
    }
    /* UTF-8 without a copy for the ASCII strings a JSON encoder mostly makes. */
    fn = PyUnicode_AsUTF8AndSize(argv[0], &fn_len);
    if (fn == NULL) {
        return NULL;
    }
    args = PyUnicode_AsUTF8AndSize(argv[1], &args_len);
    if (args == NULL) {
        return NULL;
    }
    if (argc == 3 && argv[2] != Py_None) {
        if (PyObject_GetBuffer(argv[2], &view, PyBUF_SIMPLE) < 0) {
            return NULL;
        }
        data = view.buf;
        data_len = (uint32_t)view.len;
    }
    if (fn_len > WASMPY_MAX_LEN || args_len > WASMPY_MAX_LEN || view.len > WASMPY_MAX_LEN) {
        PyErr_SetString(PyExc_OverflowError, "wasmpy request too large");
        goto done;
    }

    n = wasmpy_host_call(fn, (uint32_t)fn_len, args, (uint32_t)args_len, data, data_len);
    if (n == WASMPY_FAILED) {
        PyErr_SetString(PyExc_RuntimeError, "wasmpy host call failed");
        goto done;
    }
    if ((Py_ssize_t)n > WASMPY_MAX_LEN) {
        PyErr_SetString(PyExc_MemoryError, "wasmpy response too large");
        goto done;
    }
    body = take_body(n, &kind);
    if (body != NULL) {
        res = PyTuple_New(2);
        if (res == NULL) {
            Py_DECREF(body);
            goto done;
        }
        PyTuple_SET_ITEM(res, 0, PyLong_FromLong((long)kind)); /* a cached small int */
        PyTuple_SET_ITEM(res, 1, body);
    }

done:
    if (view.obj != NULL) {
        PyBuffer_Release(&view);
    }
    return res;
}

static PyMethodDef wasmpy_methods[] = {
    {"call", (PyCFunction)(void (*)(void))wasmpy_call, METH_FASTCALL, wasmpy_call_doc},
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
