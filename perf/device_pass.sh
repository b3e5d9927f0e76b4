#!/usr/bin/env bash
# One GPU pass after a change to the generated code: correctness of what changed, compiled on the
# GPU, then the GEMM benchmarks, with the clocks before and after. Run from the repo root on the
# device machine (ply and the shared corpus carried in .gpu_deps/); logs and JSON go to $OUT.
#   perf/device_pass.sh tests      # the GPU test pass
#   perf/device_pass.sh bench      # perf/bench.py: the forms and the f16 ladder
#   perf/device_pass.sh epilogues  # the GEMMs with epilogues: their tests on the GPU, then their speed
#   perf/device_pass.sh copies     # the copy kernels the tile IR lifts (lift/copies.py, lift/loops.py)
#   perf/device_pass.sh widen      # the widened tile kernels under auto (schedule/widen.py): tests, copies, vadd
#   perf/device_pass.sh source     # the source schedule of the contractions: the ladder, then the forms
#   perf/device_pass.sh source_tests  # their correctness on the GPU (forms, pipelines, examples)
#   perf/device_pass.sh mma        # MMA as written, fragments, apply (lift/mma.py): tests, attention
#   perf/device_pass.sh families   # levels inside warps, scratch buffers, atomics, tuples, clusters; the ladder
#   perf/device_pass.sh lifted     # the forms the tile IR took over from the deleted older lowering
#   perf/device_pass.sh issue24    # f32 precision, the sanitizer on contractions, docs, widening; bench_f32, bench_membound
#   perf/device_pass.sh suite      # the whole test suite on the GPU under pytest -n 8 (pytest-xdist carried in .gpu_deps/)
#   perf/device_pass.sh pytest ARGS  # pytest ARGS under -n 14, the whole log and the failures' lines kept in $OUT
#   perf/device_pass.sh membound   # the memory-bound kernels in both element types, both schedules (issue 27)
#   perf/device_pass.sh moments    # the column variances read once, and the column folds' line bytes swept (issue 27)
#   perf/device_pass.sh planes     # loop nests over one run of memory (schedule/planes.py), and single-pass rows in blocks (issue 27)
#   perf/device_pass.sh longrows   # perf/probe_long_rows.py (rows of 16384 held whole over two folds), then the
#                                  # GEMM shapes of issue 25 not yet timed on an H200 (4000^3, K = 1024, fp8)
#   perf/device_pass.sh reads      # perf/probe_read_rows.py: row and column sums of f16, hand-written variants (issue 27)
#   perf/device_pass.sh norms      # perf/probe_norm_rows.py: norms over long rows, hand-written variants (issue 27)
#   perf/device_pass.sh attention  # attention tuned (issue 25), untuned and tuned against SDPA
#   perf/device_pass.sh gemm25     # the launch-time GEMM tile table at the shapes of issue 25
#   perf/device_pass.sh issue25    # one call for issue 25 on an H200: tune at 8192^3 over the TMA, warp-specialization
#                                  # and group fields, then fp8 e4m3 at 8192^3, then attention against SDPA
#   perf/device_pass.sh tune       # croq2triton tune on examples/gemm_v4.co under auto (TUNE_SIZE, TUNE_BUDGET;
#                                  # TUNE_FILE, TUNE_FUNC for another kernel; TUNE_PARAMS: "--param a=1,2 ...";
#                                  # TUNE_SCHEDULE=source for the source's own #defines)
set -u -o pipefail
OUT=${OUT:-/tmp/device_out}
mkdir -p "$OUT"
# (CROQ2TRITON_LONG=1: the long tier of the tests runs too, tests/conftest.py)
export PYTHONPATH=$PWD:$PWD/.gpu_deps CROQ2TRITON_SHARED=$PWD/.gpu_deps/shared CROQ2TRITON_TEST_DEVICE=cuda CROQ2TRITON_LONG=1
unset TRITON_INTERPRET
clocks() { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader; }
echo "before: $(clocks)" | tee -a "$OUT/clocks.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/clocks.txt"
status=0
case "${1:-tests}" in
  suite)
    # every test, 8 workers (issue 28: one device call checks everything); the slowest last
    timeout 560 python3 -m pytest -q -p no:cacheprovider -n 8 tests --durations=15 2>&1 | tail -40 \
      | tee "$OUT/suite.txt" || status=1
    ;;
  pytest)
    shift
    CROQ2TRITON_FAILLOG=$OUT/failures.txt timeout "${PYTEST_TIMEOUT:-540}" python3 -m pytest -q -p no:cacheprovider -n 14 -rfE --tb=short "$@" \
      > "$OUT/pytest.txt" 2>&1 || status=1
    grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.txt" | tail -60
    ;;
  moments)
    # issue 27: the squared deviations folded in the mean's pass (schedule/moments.py), then the split
    # column folds' bytes of a row a program (policy.SPLIT_LINE_MIN) swept on the column means
    timeout 200 python3 -m pytest -q -p no:cacheprovider -n 14 -rfE --tb=short tests/test_moments.py \
      tests/test_split_phases.py tests/test_split_columns.py tests/test_irregular_forms2.py > "$OUT/pytest.txt" 2>&1 \
      || status=1
    grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.txt" | tail -30
    timeout 170 python3 perf/bench.py --membound --sizes 16384x4096,4096x16384 --rounds 3 \
      --only bn_stats,col_welford,col_std_f16 --json "$OUT/moments.json" --md "$OUT/moments.md" \
      > "$OUT/moments.txt" 2>&1 || status=1
    tail -12 "$OUT/moments.txt"
    timeout 200 python3 perf/bench.py --membound --sizes 16384x4096,4096x16384 --rounds 3 --schedules auto \
      --no-inductor --only col_means_f16,col_sums_walk --points \
      "l2k:policy.SPLIT_LINE_MIN=2048;l4k:policy.SPLIT_LINE_MIN=4096;l8k:policy.SPLIT_LINE_MIN=8192;l8kw8:policy.SPLIT_LINE_MIN=8192,policy.SPLIT_WARPS=8" \
      --json "$OUT/lines.json" --md "$OUT/lines.md" > "$OUT/lines.txt" 2>&1 || status=1
    tail -12 "$OUT/lines.txt"
    ;;
  planes)
    # issue 27: nests over the planes of NCHW tensors as one loop (schedule/planes.py): their tests compiled
    # on the GPU, their speed; then a one-pass row fold (the KL divergence) whole in registers vs in blocks
    timeout 200 python3 -m pytest -q -p no:cacheprovider -n 14 -rfE --tb=short tests/test_planes.py \
      tests/test_membound_forms7.py ${PLANES_TESTS:-} > "$OUT/pytest.txt" 2>&1 || status=1
    grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.txt" | tail -30
    timeout "${PLANES_TIMEOUT:-200}" python3 perf/bench.py --membound --sizes 16384x4096,4096x16384 --rounds 3 \
      --schedules auto --only "${PLANES_ONLY:-spatial_mean4,spatial_mean4_head,spatial_max4,plane_absmax_f16,group_stats4,plane_scale}" \
      --json "$OUT/planes.json" --md "$OUT/planes.md" > "$OUT/planes.txt" 2>&1 || status=1
    tail -14 "$OUT/planes.txt"
    timeout "${ROWS_TIMEOUT:-150}" python3 perf/bench.py --membound --sizes 16384x4096,4096x16384 --rounds 3 \
      --schedules auto --no-inductor --only "${ROWS_ONLY:-kl_div_rows}" --points "${ROWS_POINTS:-blk:policy.FOLD_WHOLE_BYTES=16384}" \
      --json "$OUT/rows.json" --md "$OUT/rows.md" > "$OUT/rows.txt" 2>&1 || status=1
    tail -10 "$OUT/rows.txt"
    ;;
  membound)
    # MEMBOUND_ARGS narrows it (e.g. "--schedules auto --rounds 2"); the JSON and markdown are
    # rewritten after every case, so a run cut by the timeout keeps what it measured
    timeout "${MEMBOUND_TIMEOUT:-560}" python3 perf/bench.py --membound --sizes 16384x4096,4096x16384 \
      ${MEMBOUND_ARGS:---rounds 3} --json "$OUT/membound.json" --md "$OUT/membound.md" > "$OUT/membound.txt" 2>&1 \
      || status=1
    tail -30 "$OUT/membound.txt"
    ;;
  tune)
    # issue 25: a sweep of the Schedule space on the GPU (tqdm carried in .gpu_deps); the table,
    # best.json, the plot and the JSON-lines cache land in $OUT/tune
    # (TUNE_FILE / TUNE_FUNC: another kernel, e.g. tests/programs/membound_forms.co col_means_f16 at
    # TUNE_SIZE=M=16384,N=4096: its fold and loop_split fields)
    # (TUNE_SIZE: one size, or several separated by ';': one winner each)
    sizes=()
    IFS=';' read -ra each <<< "${TUNE_SIZE:-M=256,N=8192,K=8192}"
    for s in "${each[@]}"; do sizes+=(--size "$s"); done
    timeout "${TUNE_TIMEOUT:-420}" python3 -m croq2triton tune "${TUNE_FILE:-examples/gemm_v4.co}" \
      ${TUNE_FUNC:+--func "$TUNE_FUNC"} --schedule "${TUNE_SCHEDULE:-auto}" ${TUNE_PARAMS:-} \
      "${sizes[@]}" --budget "${TUNE_BUDGET:-5m}" --jobs 14 --out "$OUT/${TUNE_OUT:-tune}" \
      > "$OUT/${TUNE_OUT:-tune}.txt" 2>&1 || status=1
    tail -45 "$OUT/${TUNE_OUT:-tune}.txt"
    ;;
  issue25)
    # each part under its own timeout so that one slow part leaves the others their time
    TUNE_OUT=tune_8192 TUNE_TIMEOUT=210 TUNE_BUDGET=150s TUNE_SIZE=M=8192,N=8192,K=8192 TUNE_PARAMS="--param \
      block_m=128,256 --param block_n=128,256 --param block_k=64 --param num_stages=3,4 --param num_warps=8 \
      --param group_m=8,16 --param tma=true,false --param tma_store=true,false --param warp_specialize=true,false \
      --param persistent=true,false" "$0" tune | tail -22 || status=1
    TUNE_OUT=tune_fp8 TUNE_TIMEOUT=140 TUNE_BUDGET=90s TUNE_FILE=tests/programs/gemm_forms/fp8_f32out.co \
      TUNE_FUNC=gemm TUNE_SIZE=M=8192,N=8192,K=8192 "$0" tune | tail -16 || status=1
    ATTN_BUDGET=45s "$0" attention | tail -30 || status=1
    rm -rf "$OUT"/tune_8192/cache "$OUT"/tune_fp8/cache
    ;;
  longrows)
    timeout "${LONGROWS_TIMEOUT:-260}" python3 perf/probe_long_rows.py ${LONGROWS_ARGS:-} > "$OUT/longrows.jsonl" \
      2> "$OUT/longrows.err" || status=1
    tail -3 "$OUT/longrows.err"; wc -l "$OUT/longrows.jsonl"
    timeout 130 python3 perf/bench.py --only v4 --dtypes f16 --shapes 4000 --mnk 8192x8192x1024 --rounds 3 \
      --md "$OUT/gemm25.md" > "$OUT/gemm25.txt" 2>&1 || status=1
    timeout 90 python3 perf/bench.py --forms --only fp8_f32out,fp8_f16out --shapes 8192 --rounds 3 \
      --md "$OUT/fp8.md" > "$OUT/fp8.txt" 2>&1 || status=1
    tail -12 "$OUT/gemm25.txt" "$OUT/fp8.txt"
    ;;
  reads)
    timeout "${READS_TIMEOUT:-260}" python3 perf/probe_read_rows.py ${READS_ARGS:-} > "$OUT/reads.jsonl" \
      2> "$OUT/reads.err" || status=1
    tail -3 "$OUT/reads.err"; wc -l "$OUT/reads.jsonl"
    ;;
  norms)
    # issue 27: what a norm over long rows wants (hand-written variants, perf/probe_norm_rows.py), and
    # the code torch.compile writes for the same norm and for column means
    timeout "${NORMS_TIMEOUT:-300}" python3 perf/probe_norm_rows.py --inductor-code "$OUT/inductor" \
      > "$OUT/norms.jsonl" 2> "$OUT/norms.err" || status=1
    tail -3 "$OUT/norms.err"; wc -l "$OUT/norms.jsonl"
    ;;
  attention)
    # issue 25: attention tuned over its tiles and warps, then both the untuned and the tuned translation
    # against SDPA (perf/attention_bench.py) in one process (ATTN_BUDGET: the sweep's budget)
    export PYTHONPATH=$PWD:$PWD/.gpu_deps
    timeout 200 python3 -m croq2triton tune examples/attention.co --schedule auto \
      --size BH=32,SEQ_Q=4096,SEQ_K=4096,causal=0 --param BLOCK_M=64,128 --param BLOCK_N=32,64,128 \
      --param attention_k0.num_warps=4,8 --budget "${ATTN_BUDGET:-90s}" --jobs 14 --out "$OUT/tune_attn" \
      > "$OUT/tune_attn.txt" 2>&1 || status=1
    tail -16 "$OUT/tune_attn.txt"
    python3 -m croq2triton translate examples/attention.co --schedule auto -o "$OUT/attention_auto.py" || status=1
    python3 -m croq2triton translate examples/attention.co --schedule auto --config "$OUT/tune_attn/best.json" \
      -o "$OUT/attention_tuned.py" || status=1
    timeout 150 python3 perf/attention_bench.py --seqs 4096 --bh 32 --md "$OUT/attn.md" \
      --also "$OUT/attention_auto.py" --also "$OUT/attention_tuned.py" 2>&1 | tail -12 || status=1
    rm -rf "$OUT/tune_attn/cache"
    ;;
  gemm25)
    # issue 25: the launch-time tile table (schedule/occupancy.py) at the shapes the issue names
    timeout "${GEMM_TIMEOUT:-300}" python3 perf/bench.py --only v4 --dtypes f16 --shapes 8192,4096,2048,4000,1024 \
      --mnk 8192x8192x1024,256x8192x8192 --rounds 3 --json "$OUT/gemm25.json" --md "$OUT/gemm25.md" \
      > "$OUT/gemm25.txt" 2>&1 || status=1
    tail -30 "$OUT/gemm25.txt"
    ;;
  issue24)
    # f32 precision, the OOB sanitizer on contractions, folded row kernels, the silent-wrong fixes, ops
    # under inductor, the docs' examples and widening on the GPU; then what IEEE f32 products cost,
    # and the memory-bound kernels under both schedules
    timeout 230 python3 -m pytest -q -p no:cacheprovider -x tests/test_precision.py tests/test_oob_sanitizer.py \
      tests/test_foldloops.py tests/test_silent_wrongs.py tests/test_torch_ops.py tests/test_docs.py \
      tests/test_widen.py 2>&1 | tail -15 | tee "$OUT/tests24.txt" || status=1
    timeout 150 python3 perf/bench_f32.py --shapes 1024,4096 --rounds 2 --json "$OUT/f32.json" --md "$OUT/f32.md" \
      2>&1 | tail -32 | tee "$OUT/f32.txt" || status=1
    timeout 190 python3 perf/bench_membound.py --sizes 16384x4096,4096x16384 --rounds 2 --json "$OUT/membound.json" \
      --md "$OUT/membound.md" 2>&1 | tail -40 | tee "$OUT/membound.txt" || status=1
    ;;
  tests)
    # in pieces, each under a timeout: the device gives a command 10 minutes, and the whole
    # tests/test_corpus_e2e.py compiled for the GPU does not finish in them
    timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_libmath.py tests/test_kernels_run.py \
      tests/test_contraction.py 2>&1 | tail -8 | tee "$OUT/tests.txt" || status=1
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_corpus_e2e.py -k "numerics or atomic" \
      2>&1 | tail -4 | tee -a "$OUT/tests.txt" || status=1
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_kernels_examples.py \
      tests/test_every_kernel_runs.py -k "examples or lower" 2>&1 | tail -4 | tee -a "$OUT/tests.txt" || status=1
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_forms.py -k "computes and auto" \
      2>&1 | tail -4 | tee "$OUT/gemm_forms.txt" || status=1
    ;;
  bench)
    python3 perf/bench.py --forms --shapes 4096,8192 --rounds 3 --json "$OUT/forms.json" --md "$OUT/forms.md" \
      2>&1 | tail -45 | tee "$OUT/forms.txt" || status=1
    python3 perf/bench.py --dtypes f16 --shapes 4096,8192 --rounds 3 --json "$OUT/ladder.json" --md "$OUT/ladder.md" \
      2>&1 | tail -30 | tee "$OUT/ladder.txt" || status=1
    ;;
  epilogues)
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_epilogues.py -m "not slow" \
      tests/test_contraction.py 2>&1 | tail -6 | tee "$OUT/epilogue_tests.txt" || status=1
    timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_forms.py \
      -k "computes and (thread_store_shared or block_scalar)" 2>&1 | tail -3 | tee -a "$OUT/epilogue_tests.txt" || status=1
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_schedules_agree.py 2>&1 | tail -3 \
      | tee -a "$OUT/epilogue_tests.txt" || status=1
    timeout 400 python3 perf/bench_epilogues.py --shapes 4096,8192 --rounds 3 --json "$OUT/epilogues.json" \
      --md "$OUT/epilogues.md" 2>&1 | tail -20 | tee "$OUT/epilogues.txt" || status=1
    ;;
  lifted)
    # what only the older lowering translated before 2026-12-02: small / u8 MMAs, parts of buffers,
    # run-time tiles under MMAs, per-thread copies, span_as, run-time select, shape bounds
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_corpus_e2e.py -k "ampere or wmma or store_mask" \
      2>&1 | tail -4 | tee "$OUT/lifted.txt" || status=1
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_kernels_corpus.py tests/test_kernels_user.py \
      2>&1 | tail -4 | tee -a "$OUT/lifted.txt" || status=1
    timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_irregular.py tests/test_host_code.py \
      tests/test_lift_copies.py tests/test_lift_elementwise.py tests/test_frags.py tests/test_pipelines.py \
      2>&1 | tail -6 | tee -a "$OUT/lifted.txt" || status=1
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_irregular_forms.py -k "reshape or local" \
      tests/test_lift_mma.py tests/test_lift_parts.py 2>&1 | tail -4 | tee -a "$OUT/lifted.txt" || status=1
    ;;
  widen)
    # the widened tile kernels (schedule/widen.py): correctness on the GPU, then their speed
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_widen.py tests/test_lift_copies.py \
      tests/test_lift_elementwise.py tests/test_tma_oob.py 2>&1 | tail -4 | tee "$OUT/widen.txt" || status=1
    timeout 200 python3 perf/bench_copies.py --rounds 5 --md "$OUT/copies.md" --json "$OUT/copies.json" \
      2>&1 | tail -20 | tee "$OUT/copies.txt" || status=1
    timeout 150 python3 perf/bench_gather.py --rounds 3 --md "$OUT/gather.md" --json "$OUT/gather.json" \
      2>&1 | tail -20 | tee "$OUT/gather.txt" || status=1
    ;;
  copies)
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_lift_copies.py tests/test_lift_elementwise.py \
      tests/test_kernels_examples.py 2>&1 | tail -4 | tee "$OUT/copies.txt" || status=1
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_corpus_e2e.py -k "dma or tiled or copies" \
      2>&1 | tail -4 | tee -a "$OUT/copies.txt" || status=1
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_every_kernel_runs.py \
      -k "dma or copy or chunkat or foreach or para_list or parallel_add or tiled_add or hetero or fp8_ops" \
      2>&1 | tail -4 | tee -a "$OUT/copies.txt" || status=1
    ;;
  mma)
    # MMA as written, fragments and apply on the tile-IR path (lift/mma.py): correctness on the GPU,
    # then attention against the older lowering's translations carried in .gpu_deps/older/
    timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_lift_mma.py tests/test_frags.py \
      tests/test_tma_oob.py 2>&1 | tail -4 | tee "$OUT/mma_tests.txt" || status=1
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_corpus_e2e.py \
      -k "wgmma or gdn or flash or mask or scale or attention or ampere" 2>&1 | tail -4 | tee -a "$OUT/mma_tests.txt" || status=1
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_pipelines.py tests/test_lift_copies.py \
      tests/test_kernels_user.py 2>&1 | tail -4 | tee -a "$OUT/mma_tests.txt" || status=1
    timeout 240 python3 perf/attention_bench.py --seqs 1024,4096 --bh 32 --md "$OUT/attn.md" \
      $(for f in .gpu_deps/older/*.py; do echo --also "$f"; done) 2>&1 | tail -30 | tee "$OUT/attn.txt" || status=1
    ;;
  source)
    timeout 330 python3 perf/bench.py --dtypes f16 --shapes 4096,8192 --rounds 3 --json "$OUT/ladder.json" \
      --md "$OUT/ladder.md" 2>&1 | tail -30 | tee "$OUT/ladder.txt" || status=1
    timeout 240 python3 perf/bench.py --forms --schedules source --shapes 4096,8192 --rounds 1 \
      --json "$OUT/forms_source.json" --md "$OUT/forms_source.md" 2>&1 | tail -45 | tee "$OUT/forms_source.txt" || status=1
    ;;
  source_compare)
    # the source schedule of the contractions against the same kernels as written ("older": the
    # older lowering until 2026-12-02, the tile IR's lifting as written since), one run
    for path in older contraction; do
      if [ $path = older ]; then export CROQ2TRITON_NO_CONTRACTION=1; else unset CROQ2TRITON_NO_CONTRACTION; fi
      timeout 200 python3 perf/bench.py --dtypes f16 --shapes 4096,8192 --rounds 3 --only v0,v1,v2,v3,seed,wgmma_ss \
        --source-only --json "$OUT/ladder_$path.json" --md "$OUT/ladder_$path.md" 2>&1 | tail -16 \
        | tee "$OUT/ladder_$path.txt" || status=1
    done
    unset CROQ2TRITON_NO_CONTRACTION
    ;;
  families)
    # the kernel families this tile IR took over from the older lowering (thread levels inside
    # warps, scratch buffers and atomics, index tuples, run-time tiles, clusters), then the ladder
    timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_lift_levels.py tests/test_lift_scratch.py \
      tests/test_lift_tuples.py tests/test_lift_copies.py tests/test_irregular_forms.py tests/test_host_ir.py \
      2>&1 | tail -6 | tee "$OUT/families.txt" || status=1
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_corpus_e2e.py \
      -k "copy or fp8 or memreuse or add or atomic or gdn or stream or tbc or histogram or dma" 2>&1 | tail -6 \
      | tee -a "$OUT/families.txt" || status=1
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_every_kernel_runs.py tests/test_kernels_run.py \
      tests/test_frags.py -k "parse or pp or kernels_run or bump" 2>&1 | tail -4 | tee -a "$OUT/families.txt" || status=1
    timeout 330 python3 perf/bench.py --dtypes f16 --shapes 4096,8192 --rounds 3 --json "$OUT/ladder.json" \
      --md "$OUT/ladder.md" 2>&1 | tail -30 | tee "$OUT/ladder.txt" || status=1
    ;;
  source_tests)
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_forms.py -k "computes and source" \
      2>&1 | tail -4 | tee "$OUT/source_tests.txt" || status=1
    timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_pipelines.py tests/test_kernels_examples.py \
      tests/test_schedules_agree.py 2>&1 | tail -4 | tee -a "$OUT/source_tests.txt" || status=1
    ;;
esac
echo "after: $(clocks)" | tee -a "$OUT/clocks.txt"
exit $status
