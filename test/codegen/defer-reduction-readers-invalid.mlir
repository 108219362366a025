// RUN: weft-opt %s -verify-diagnostics --pass-pipeline='builtin.module(sched.program(weft-sched-defer-reduction-readers))'

// It moves instructions, so it runs before memory planning fixes their
// buffers' offsets and live ranges.
// expected-error @+1 {{weft-sched-defer-reduction-readers runs before memory planning (the program is planned)}}
sched.program @planned arena(64) align(64) events(0) streams ["compute"] {
^bb0(%x: !sched.buffer<16xf32>):
  sched.return ["x"] %x : !sched.buffer<16xf32>
}
