/**
 * The link test's program: a torch.distributed all-reduce over NCCL, one process per node, met at
 * MASTER_ADDR:MASTER_PORT (torch's env:// rendezvous, as torchrun sets it). It prints nccl-tests'
 * `all_reduce_perf` table (the same columns, so one parser reads both), rank 0 only; NCCL itself
 * prints its NCCL_DEBUG=INFO lines. busbw = algbw * 2(n-1)/n, nccl-tests' all-reduce factor.
 */
export const ALLREDUCE_PY = `import datetime, os, sys, time
import torch
import torch.distributed as dist

env = os.environ
rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
lo, hi = int(env.get("SM121_LINKTEST_MIN_BYTES", "8")), int(env.get("SM121_LINKTEST_MAX_BYTES", "1073741824"))
warmup, iters = 5, 20
torch.cuda.set_device(int(env.get("LOCAL_RANK", "0")))
timeout = datetime.timedelta(seconds=int(env.get("SM121_LINKTEST_TIMEOUT_S", "120")))
dist.init_process_group("nccl", timeout=timeout)
out = sys.stdout
if rank == 0:
    out.write("# nThread 1 nGpus 1 minBytes %d maxBytes %d step: 2(factor) warmup iters: %d iters: %d "
              "agg iters: 1 validation: 1 graph: 0\\n#\\n" % (lo, hi, warmup, iters))
    out.write("#%59s%35s\\n" % ("out-of-place", "in-place"))
    out.write("#       size         count      type   redop    root     time   algbw   busbw  #wrong"
              "     time   algbw   busbw  #wrong\\n")
    out.write("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
              "             (us)  (GB/s)  (GB/s)\\n")


def timed(x):
    for _ in range(warmup):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / iters * 1e6


size = lo
while size <= hi:
    count = max(size // 4, 1)
    x = torch.ones(count, dtype=torch.float32, device="cuda")
    us = timed(x)
    x.fill_(1.0)
    dist.all_reduce(x)
    wrong = int((x != world).sum().item())
    algbw = count * 4 / us / 1e3
    busbw = algbw * 2 * (world - 1) / world
    if rank == 0:
        half = "%9.2f  %6.2f  %6.2f  %6d" % (us, algbw, busbw, wrong)
        out.write("%12d  %12d  %8s  %6s  %6d  %s  %s\\n" % (count * 4, count, "float", "sum", -1, half, half))
        out.flush()
    size *= 2
dist.destroy_process_group()
`;
