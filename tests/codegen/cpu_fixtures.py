"""Recorded CPUs for the target-description tests (facts only: no test needs the machine).

* ``ZEN4``: this project's AMD EPYC Zen 4 KVM guest, recorded 2026-11-26 (``/proc/cpuinfo``, sysfs,
  llvmlite's host features) with its micro-benchmark (``polyopt target --json``);
* ``ZEN5``: the Zen 5 guest of 2026-11-22, flags and caches from
  ``experiments/results/2026-11-22-7f77e27/machine.json``; no LLVM feature string was recorded
  (the facts fall back on the cpuinfo flags); micro-benchmark figures from PERF-NOTES.md's peaks
  (137 GFLOPS f64 with two full-width 512-bit FMA pipes);
* ``ZEN3``: the AVX2 Zen 3 guest (flags as a Zen 3 EPYC KVM guest reports them, caches from
  PERF-NOTES.md: 32 KiB 8-way L1d, 512 KiB 8-way L2);
* ``INTEL_AMX``: the Intel Xeon of 2026-11-24, reported as family 6 model 167 (LLVM: ``rocketlake``):
  AVX-512 with FP16, AMX tile/bf16/int8; 48 KiB L1d, 2 MiB L2, 504 MiB L3 (PERF-NOTES.md); its
  peak 122.5 GFLOPS f64 is two full-width 512-bit FMAs per cycle.

Flags, ways and measurements of the last three are reconstructed from those notes, not
re-recorded: the tests check how the facts are read and what follows from them.
"""

ZEN4 = dict(
    cpuinfo='processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\nflags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm cmp_legacy cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw topoext vmmcall fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx512_bf16 clzero xsaveerptr arat avx512vbmi umip avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid fsrm\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\n',
    caches=[{'level': '1', 'type': 'Data', 'size': '32K', 'ways_of_associativity': '8', 'coherency_line_size': '64', 'shared_cpu_list': '0'}, {'level': '1', 'type': 'Instruction', 'size': '32K', 'ways_of_associativity': '8', 'coherency_line_size': '64', 'shared_cpu_list': '0'}, {'level': '2', 'type': 'Unified', 'size': '1024K', 'ways_of_associativity': '8', 'coherency_line_size': '64', 'shared_cpu_list': '0'}, {'level': '3', 'type': 'Unified', 'size': '32768K', 'ways_of_associativity': '16', 'coherency_line_size': '64', 'shared_cpu_list': '0-1'}],
    llvm_cpu='znver4',
    llvm_features='+64bit,+adx,+aes,-amx-avx512,-amx-bf16,-amx-complex,-amx-fp16,-amx-fp8,-amx-int8,-amx-movrs,-amx-tf32,-amx-tile,+avx,-avx10.1,-avx10.2,+avx2,+avx512bf16,+avx512bitalg,+avx512bw,+avx512cd,+avx512dq,+avx512f,-avx512fp16,+avx512ifma,+avx512vbmi,+avx512vbmi2,+avx512vl,+avx512vnni,-avx512vp2intersect,+avx512vpopcntdq,-avxifma,-avxneconvert,-avxvnni,-avxvnniint16,-avxvnniint8,+bmi,+bmi2,-ccmp,-cf,-cldemote,+clflushopt,+clwb,+clzero,+cmov,-cmpccxadd,+crc32,+cx16,+cx8,-egpr,-enqcmd,+f16c,+fma,-fma4,+fsgsbase,+fxsr,+gfni,-hreset,+invpcid,-kl,-lwp,+lzcnt,+mmx,+movbe,-movdir64b,-movdiri,-movrs,-mwaitx,-ndd,-nf,+pclmul,-pconfig,-pku,+popcnt,-ppx,-prefetchi,+prfchw,-ptwrite,-push2pop2,-raoint,+rdpid,-rdpru,+rdrnd,+rdseed,-rtm,+sahf,-serialize,-sgx,+sha,-sha512,+shstk,-sm3,-sm4,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+sse4a,+ssse3,-tbm,-tsxldtrk,-uintr,-usermsr,+vaes,+vpclmulqdq,-waitpkg,-wbnoinvd,-widekl,-xop,+xsave,+xsavec,+xsaveopt,+xsaves,-zu',
    measurements={'clock_ghz': 3.69, 'fma': {
        'f64x256': dict(bits=256, dtype='f64', gflops=59.07, fmas_per_ns=7.384, fmas_per_cycle=2.0, latency_cycles=4.0, latency_ns=1.084),
        'f32x256': dict(bits=256, dtype='f32', gflops=117.8, fmas_per_ns=7.362, fmas_per_cycle=2.0, latency_cycles=4.0, latency_ns=1.084),
        'f64x512': dict(bits=512, dtype='f64', gflops=59.07, fmas_per_ns=3.692, fmas_per_cycle=1.0, latency_cycles=4.0, latency_ns=1.083),
        'f32x512': dict(bits=512, dtype='f32', gflops=118.18, fmas_per_ns=3.693, fmas_per_cycle=1.0, latency_cycles=4.0, latency_ns=1.085)},
        'loads_per_cycle': {'256': 2.0, '512': 0.88},
        'l2_bytes_per_cycle': {'256': 32.0, '512': 32.0},
        'gathers_per_cycle': {'256': 0.2}, 'measured': True},
)

ZEN5 = dict(
    cpuinfo='processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\nstepping\t: 0\nflags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm cmp_legacy cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw topoext vmmcall fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 clzero xsaveerptr arat avx512vbmi umip avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid fsrm avx512_vp2intersect\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\n',
    caches=[{'level': '1', 'type': 'Data', 'size': '48K', 'ways_of_associativity': '12', 'coherency_line_size': '64', 'shared_cpu_list': '0'}, {'level': '1', 'type': 'Instruction', 'size': '32K', 'ways_of_associativity': '8', 'coherency_line_size': '64', 'shared_cpu_list': '0'}, {'level': '2', 'type': 'Unified', 'size': '1024K', 'ways_of_associativity': '16', 'coherency_line_size': '64', 'shared_cpu_list': '0'}, {'level': '3', 'type': 'Unified', 'size': '32768K', 'ways_of_associativity': '16', 'coherency_line_size': '64', 'shared_cpu_list': '0-1'}],
    llvm_cpu='znver5',
    llvm_features='',
    measurements={'clock_ghz': 4.28, 'fma': {
        'f64x256': dict(bits=256, dtype='f64', gflops=68.5, fmas_per_ns=8.56, fmas_per_cycle=2.0, latency_cycles=4.0, latency_ns=0.93),
        'f64x512': dict(bits=512, dtype='f64', gflops=137.0, fmas_per_ns=8.56, fmas_per_cycle=2.0, latency_cycles=4.0, latency_ns=0.93)},
        'measured': True},
)

ZEN3 = dict(
    cpuinfo='processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC 7B13\nstepping\t: 1\nflags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm cmp_legacy cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw topoext invpcid_single ssbd ibrs ibpb stibp vmmcall fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid rdseed adx smap clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 xsaves clzero xsaveerptr wbnoinvd arat umip pku ospke vaes vpclmulqdq rdpid fsrm\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\n',
    caches=[{'level': '1', 'type': 'Data', 'size': '32K', 'ways_of_associativity': '8', 'coherency_line_size': '64', 'shared_cpu_list': '0'}, {'level': '1', 'type': 'Instruction', 'size': '32K', 'ways_of_associativity': '8', 'coherency_line_size': '64', 'shared_cpu_list': '0'}, {'level': '2', 'type': 'Unified', 'size': '512K', 'ways_of_associativity': '8', 'coherency_line_size': '64', 'shared_cpu_list': '0'}, {'level': '3', 'type': 'Unified', 'size': '32768K', 'ways_of_associativity': '16', 'coherency_line_size': '64', 'shared_cpu_list': '0-1'}],
    llvm_cpu='znver3',
    llvm_features='',
    measurements={'clock_ghz': 3.0, 'fma': {
        'f64x256': dict(bits=256, dtype='f64', gflops=48.0, fmas_per_ns=6.0, fmas_per_cycle=2.0, latency_cycles=4.0, latency_ns=1.33)},
        'measured': True},
)

INTEL_AMX = dict(
    cpuinfo='processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 167\nmodel name\t: Intel Xeon Processor\nstepping\t: 1\nflags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch cpuid_fault invpcid_single ssbd ibrs ibpb stibp ibrs_enhanced fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 wbnoinvd arat avx512vbmi umip pku ospke waitpkg avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg tme avx512_vpopcntdq la57 rdpid bus_lock_detect cldemote movdiri movdir64b fsrm md_clear serialize tsxldtrk amx_bf16 avx512_fp16 amx_tile amx_int8 flush_l1d arch_capabilities\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\n',
    caches=[{'level': '1', 'type': 'Data', 'size': '48K', 'ways_of_associativity': '12', 'coherency_line_size': '64', 'shared_cpu_list': '0'}, {'level': '1', 'type': 'Instruction', 'size': '32K', 'ways_of_associativity': '8', 'coherency_line_size': '64', 'shared_cpu_list': '0'}, {'level': '2', 'type': 'Unified', 'size': '2048K', 'ways_of_associativity': '16', 'coherency_line_size': '64', 'shared_cpu_list': '0'}, {'level': '3', 'type': 'Unified', 'size': '516096K', 'ways_of_associativity': '16', 'coherency_line_size': '64', 'shared_cpu_list': '0-1'}],
    llvm_cpu='rocketlake',
    llvm_features='',
    measurements={'clock_ghz': 3.83, 'fma': {
        'f64x256': dict(bits=256, dtype='f64', gflops=61.3, fmas_per_ns=7.66, fmas_per_cycle=2.0, latency_cycles=4.0, latency_ns=1.04),
        'f64x512': dict(bits=512, dtype='f64', gflops=122.5, fmas_per_ns=7.66, fmas_per_cycle=2.0, latency_cycles=4.0, latency_ns=1.04)},
        'measured': True},
)
