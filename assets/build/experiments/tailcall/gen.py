#!/usr/bin/env python3
"""gen.py OUT.c: a toy bytecode interpreter shaped like CPython 3.14's.

One C source, two dispatch schemes chosen at compile time, as CPython 3.14
builds its generated cases either way:

  -DDISPATCH_SWITCH  one big function: a loop around a switch (what a wasm
                     build of CPython 3.13 is: no computed gotos on wasm);
  -DDISPATCH_TAIL    one function per opcode with CPython 3.14's handler
                     signature (frame, stack_pointer, tstate, next_instr,
                     oparg), each ending in [[clang::musttail]] through a
                     table: return_call_indirect with -mtail-call.

The opcode set mimics the interpreter loop's size and texture: 12 core
opcodes (fast locals, constants, arithmetic on boxed refcounted integers,
compare, branches, a call to a C helper, return) and NFILL "specialised"
opcodes, each with a type guard that deopts to a shared slow path (as
CPython's DEOPT_IF), a boxed-integer result and a refcount drop, so the
switch has about as many cases as CPython's loop with its specialised and
instrumented opcodes. The program's loop body runs
the core ops and 48 different fillers. It prints a checksum, equal for both
schemes and for a native build.

gen.py [--nfill N] [--hot H] OUT.c: fill opcode k is the same whatever N, and
the loop runs the first H of them (H <= N) in one fixed order, so builds that
differ only in N run the same instructions and differ only in cold cases.
"""
import argparse
import random

ap = argparse.ArgumentParser()
ap.add_argument("--nfill", type=int, default=220)
ap.add_argument("--hot", type=int, default=48)
ap.add_argument("--loops", type=int, default=2_000_000)
ap.add_argument("out")
args = ap.parse_args()
NFILL, HOT_FILL, LOOPS = args.nfill, args.hot, args.loops
assert 0 < HOT_FILL <= NFILL

rnd = random.Random(3140)

core = ["LOAD_FAST", "STORE_FAST", "LOAD_CONST", "BINARY_ADD", "BINARY_SUB", "BINARY_XOR",
        "COMPARE_LT", "POP_JUMP_IF_FALSE", "JUMP_BACKWARD", "CALL_HELPER", "RETURN_VALUE", "POP_TOP"]
fills = [f"FILL_{k}" for k in range(NFILL)]
ops = core + fills
assert len(ops) <= 256

bodies = {
    "LOAD_FAST": "Obj *o = frame->locals[oparg]; INCREF(o); *sp++ = o;",
    "STORE_FAST": "Obj *o = *--sp; Obj *old = frame->locals[oparg]; frame->locals[oparg] = o; DECREF(ts, old);",
    "LOAD_CONST": "Obj *o = frame->consts[oparg]; INCREF(o); *sp++ = o;",
    "POP_TOP": "Obj *o = *--sp; DECREF(ts, o);",
    "COMPARE_LT": "Obj *b = *--sp; Obj *a = sp[-1]; if (a->type != T_INT || b->type != T_INT) GOTO_ERROR();"
                  " Obj *r = a->v < b->v ? &true_obj : &false_obj; INCREF(r); DECREF(ts, a); DECREF(ts, b); sp[-1] = r;",
    "POP_JUMP_IF_FALSE": "Obj *o = *--sp; int t = o->v != 0; DECREF(ts, o); if (!t) next_instr = frame->code + oparg;",
    "JUMP_BACKWARD": "next_instr = frame->code + oparg; if (--ts->eval_breaker <= 0) { eval_breaker(ts); }",
    "CALL_HELPER": "Obj *b = *--sp; Obj *a = sp[-1]; Obj *r = new_int(ts, helper(a->v, b->v));"
                   " if (r == 0) GOTO_ERROR(); DECREF(ts, a); DECREF(ts, b); sp[-1] = r;",
    "RETURN_VALUE": "Obj *o = *--sp; RETURN(o);",
}
for name, op in (("BINARY_ADD", "+"), ("BINARY_SUB", "-"), ("BINARY_XOR", "^")):
    bodies[name] = ("Obj *b = *--sp; Obj *a = sp[-1]; DEOPT_IF(a->type != T_INT || b->type != T_INT);"
                    f" Obj *r = new_int(ts, a->v {op} b->v); if (r == 0) GOTO_ERROR();"
                    " DECREF(ts, a); DECREF(ts, b); sp[-1] = r;")
for k, name in enumerate(fills):
    kr = random.Random(k)
    c1, c2, c3 = kr.randrange(3, 1 << 20) | 1, kr.randrange(1 << 30), kr.randrange(1, 13)
    kind = k % 4
    if kind == 0:
        expr = f"(a->v * {c1}) ^ (a->v >> {c3})"
    elif kind == 1:
        expr = f"(a->v + {c2}) & 0xffffffffffLL"
    elif kind == 2:
        expr = f"a->v > {c2} ? a->v - {c1} : a->v + {c3}"
    else:
        expr = f"(a->v << {c3 % 5}) - (a->v >> {c3}) + {c1}"
    bodies[name] = (f"Obj *a = sp[-1]; DEOPT_IF(a->type != T_INT); int64_t x = {expr};"
                    " if (x == a->v) { INCREF(a); } else { Obj *r = new_int(ts, x & 0xfffffffffffLL);"
                    " if (r == 0) GOTO_ERROR(); DECREF(ts, a); a = r; } sp[-1] = a;")

# The program: locals 0 = i, 1 = acc, 2 = n; consts 0 = 0, 1 = 1, 2 = n, 3 = 7.
prog = []
def emit(op, arg=0):
    prog.append((ops.index(op), arg))
emit("LOAD_CONST", 0); emit("STORE_FAST", 0)
emit("LOAD_CONST", 0); emit("STORE_FAST", 1)
loop = len(prog)
emit("LOAD_FAST", 0); emit("LOAD_CONST", 2); emit("COMPARE_LT")
jump_at = len(prog); emit("POP_JUMP_IF_FALSE", 0)
hot = fills[:HOT_FILL]
rnd.shuffle(hot)
emit("LOAD_FAST", 1)
for j, f in enumerate(hot):
    emit(f)
    if j % 8 == 7:
        emit("LOAD_FAST", 0); emit("BINARY_XOR")
    if j % 16 == 15:
        emit("LOAD_CONST", 3); emit("CALL_HELPER")
emit("STORE_FAST", 1)
emit("LOAD_FAST", 0); emit("LOAD_CONST", 1); emit("BINARY_ADD"); emit("STORE_FAST", 0)
emit("JUMP_BACKWARD", loop)
prog[jump_at] = (prog[jump_at][0], len(prog))
emit("LOAD_FAST", 1); emit("RETURN_VALUE")

out = []
w = out.append
w("/* generated by gen.py: do not edit */")
w("#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>")
w("enum { T_INT = 1, T_BOOL = 2 };")
w("typedef struct Obj { int32_t refcnt; int32_t type; int64_t v; struct Obj *next; } Obj;")
w("typedef uint16_t Instr;")
w("typedef struct Frame { Instr *code; Obj **locals; Obj **consts; Obj **stack; } Frame;")
w("typedef struct Thread { Obj *freelist; int64_t eval_breaker; int64_t ticks; int64_t deopts; } Thread;")
w("static Obj true_obj = {1 << 30, T_BOOL, 1, 0}, false_obj = {1 << 30, T_BOOL, 0, 0};")
w("#define INCREF(o) ((o)->refcnt++)")
w("__attribute__((noinline)) static void dealloc(Thread *ts, Obj *o) { o->next = ts->freelist; ts->freelist = o; }")
w("#define DECREF(ts, o) do { Obj *_o = (o); if (--_o->refcnt == 0) dealloc((ts), _o); } while (0)")
w("static inline Obj *new_int(Thread *ts, int64_t v) { Obj *o = ts->freelist;"
  " if (o) ts->freelist = o->next; else if (!(o = malloc(sizeof(Obj)))) return 0;"
  " o->refcnt = 1; o->type = T_INT; o->v = v; return o; }")
w("__attribute__((noinline)) static int64_t helper(int64_t a, int64_t b) {"
  " uint64_t h = 1469598103934665603ULL; for (int i = 0; i < 4; i++) { h = (h ^ (uint64_t)(a >> (8 * i))) * 1099511628211ULL; }"
  " return (int64_t)((h ^ (uint64_t)b) & 0xfffffffffffULL); }")
w("__attribute__((noinline)) static void eval_breaker(Thread *ts) { ts->eval_breaker = 1000; ts->ticks++; }")
w("__attribute__((noinline)) static Obj *slow_path(Thread *ts, int op) { ts->deopts++; fprintf(stderr, \"deopt %d\\n\", op); abort(); }")
w(f"enum {{ {', '.join(f'OP_{o} = {i}' for i, o in enumerate(ops))} }};")
w("#ifdef DISPATCH_SWITCH")
w("#define RETURN(o) return (o)")
w("#define GOTO_ERROR() return 0")
w("#define DEOPT_IF(c) do { if (__builtin_expect(c, 0)) return slow_path(ts, op); } while (0)")
w("static Obj *run(Frame *frame, Obj **sp, Thread *ts, Instr *next_instr) {")
w("  for (;;) { Instr in = *next_instr++; int op = in & 0xff, oparg = in >> 8; (void)oparg; switch (op) {")
for o in ops:
    w(f"    case OP_{o}: {{ {bodies[o]} break; }}")
w("    default: __builtin_unreachable();")
w("  } }\n}")
w("#else")
w("#define PARAMS Frame *frame, Obj **sp, Thread *ts, Instr *next_instr, int oparg")
w("typedef Obj *(*handler)(PARAMS);")
w("static const handler table[256];")
w("#define DISPATCH() do { Instr _in = *next_instr++; __attribute__((musttail)) return table[_in & 0xff](frame, sp, ts, next_instr, _in >> 8); } while (0)")
w("#define RETURN(o) return (o)")
w("#define GOTO_ERROR() return 0")
for i, o in enumerate(ops):
    w(f"static Obj *h_{o}(PARAMS) {{ enum {{ op = {i} }};")
    w(f"#define DEOPT_IF(c) do {{ if (__builtin_expect(c, 0)) return slow_path(ts, op); }} while (0)")
    w(f"  {{ {bodies[o]} }} DISPATCH();\n}}")
    w("#undef DEOPT_IF")
w(f"static const handler table[256] = {{ {', '.join(f'h_{o}' for o in ops)} }};")
w("static Obj *run(Frame *frame, Obj **sp, Thread *ts, Instr *next_instr) { Instr in = *next_instr++; return table[in & 0xff](frame, sp, ts, next_instr, in >> 8); }")
w("#endif")
w(f"static Instr code[] = {{ {', '.join(str(op | arg << 8) for op, arg in prog)} }};")
w("int main(int argc, char **argv) {")
w(f"  int64_t n = argc > 1 ? atoll(argv[1]) : {LOOPS};")
w("  Thread ts = {0, 1000, 0, 0};")
w("  Obj *consts[4] = { new_int(&ts, 0), new_int(&ts, 1), new_int(&ts, n), new_int(&ts, 7) };")
w("  Obj *locals[3] = { 0, 0, 0 }; locals[0] = consts[0]; locals[1] = consts[0]; locals[2] = consts[0];")
w("  consts[0]->refcnt += 3;")
w("  Obj *stack[64]; Frame f = { code, locals, consts, stack };")
w("  Obj *r = run(&f, stack, &ts, code);")
w("  if (!r) { fprintf(stderr, \"error\\n\"); return 1; }")
w("  printf(\"%lld %lld\\n\", (long long)r->v, (long long)ts.ticks);")
w("  return 0;\n}")
open(args.out, "w").write("\n".join(out) + "\n")
