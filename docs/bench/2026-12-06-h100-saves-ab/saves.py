"""One save, in a fresh process (issue 60): WAY DIR -> one JSON line.
save_file: hipfile.safetensors.save_file(durable=True), then load_file right after (bitwise);
st_fsync: safetensors.torch.save_file + os.fsync; dcp: dcp.save with hipfile.dcp.StorageWriter
(durable); fsw: dcp.save with FileSystemWriter (sync_files=True). The page cache dropped before."""
import json, os, shutil, sys, time, warnings
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from save_bench import state_dict, drop
import torch
way, d = sys.argv[1], sys.argv[2]
warnings.simplefilter("ignore")
os.makedirs(d, exist_ok=True)
sd = state_dict(float(os.environ.get("SIZE_GB", "4.3")))
nbytes = sum(t.numel() * t.element_size() for t in sd.values())
path = os.path.join(d, "ckpt." + way)
shutil.rmtree(path, ignore_errors=True)
if os.path.exists(path): os.unlink(path)
out = {"way": way, "tensor_bytes": nbytes}
if way in ("save_file", "dcp"):
    import hipfile, hipfile.safetensors as hs, hipfile.dcp
    hs.save_file({"w": sd[next(iter(sd))]}, os.path.join(d, "warm.st")); os.unlink(os.path.join(d, "warm.st"))
    out["hipfile"] = os.path.dirname(hipfile.__file__)
drop()
t0 = time.perf_counter()
if way == "save_file":
    hs.save_file(sd, path, {"format": "pt"}, durable=True)
elif way == "st_fsync":
    import safetensors.torch as st
    st.save_file(sd, path, {"format": "pt"})
    fd = os.open(path, os.O_RDONLY); os.fsync(fd); os.close(fd)
elif way in ("dcp", "fsw"):
    import torch.distributed.checkpoint as dcp
    w = hipfile.dcp.StorageWriter(path) if way == "dcp" else dcp.FileSystemWriter(path)
    dcp.save(sd, storage_writer=w)
secs = time.perf_counter() - t0
size = os.path.getsize(path) if os.path.isfile(path) else sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
out.update(file_bytes=size, secs=round(secs, 3), gbps=round(size / secs / 1e9, 3))
if way == "save_file":  # a load right after the durable save
    t0 = time.perf_counter()
    back = hs.load_file(path, device="cuda:0"); torch.cuda.synchronize()
    s = time.perf_counter() - t0
    out["load_after_gbps"] = round(size / s / 1e9, 3)
    out["load_after_bitwise"] = all(torch.equal(back[k].view(-1).view(torch.uint8), sd[k].view(-1).view(torch.uint8)) for k in sd)
if way == "dcp":
    back = {k: torch.zeros_like(v) for k, v in sd.items()}
    t0 = time.perf_counter(); dcp.load(back, storage_reader=hipfile.dcp.StorageReader(path)); torch.cuda.synchronize()
    out["load_after_gbps"] = round(nbytes / (time.perf_counter() - t0) / 1e9, 3)
    out["load_after_bitwise"] = all(torch.equal(back[k].view(-1).view(torch.uint8), sd[k].view(-1).view(torch.uint8)) for k in sd)
shutil.rmtree(path, ignore_errors=True)
if os.path.exists(path): os.unlink(path)
print(json.dumps(out), flush=True)
