//! Stream-ordered I/O (semantics §12) through the Rust API, on the system platform over the
//! mock GPU (the real bounce path, its lanes and workers): random interleavings of operations
//! on several streams against a model, under each way of signalling; many threads with batches
//! and stream operations on little staging; and a runtime without stream memory operations.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hipfile::stream::{STREAM_FIXED_FILE_OFFSET, STREAM_FIXED_FILE_SIZE};
use hipfile::{
    BatchEntry, Direction, Driver, DriverGuard, GpuRuntime, OpError, RegisteredBuffer, RegisteredFile, Stream,
    SystemPlatform,
};
use hipfile_backend_mock::MockGpu;

fn guard(gpu: &Arc<MockGpu>, vars: &[(&'static str, &'static str)]) -> DriverGuard<SystemPlatform> {
    let mut vars = vars.to_vec();
    vars.extend([("HIPFILE_UNSUPPORTED_FILE_SYSTEMS", "true"), ("HIPFILE_BOUNCE_CHUNK_KIB", "64")]);
    let driver = Driver::with_env(SystemPlatform::over_mock(Arc::clone(gpu)), move |name| {
        vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    });
    DriverGuard::open(Arc::new(driver)).unwrap()
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[2] ^ seed).collect()
}

fn file_with(data: &[u8]) -> (tempfile::TempDir, File) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    std::fs::write(&path, data).unwrap();
    (dir, std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap())
}

fn contents(file: &File) -> Vec<u8> {
    std::fs::read(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap()
}

/// `f` and `len` bytes of fresh device memory, registered with `g`: the file, the memory's
/// address and the buffer.
fn registered<'g>(
    g: &'g DriverGuard<SystemPlatform>,
    gpu: &MockGpu,
    f: &'g File,
    len: usize,
) -> (RegisteredFile<'g, SystemPlatform>, usize, RegisteredBuffer<'g, SystemPlatform>) {
    let dev = gpu.malloc(len).unwrap();
    (g.register_file(f).unwrap(), dev, g.register_buffer(dev, len).unwrap())
}

/// A host function holding `stream` until the returned flag is set.
fn hold(gpu: &MockGpu, stream: Stream) -> Arc<AtomicBool> {
    let open = Arc::new(AtomicBool::new(false));
    let o = Arc::clone(&open);
    let wait = move || {
        while !o.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_micros(50));
        }
    };
    gpu.launch_host_func(stream, Box::new(wait)).unwrap();
    open
}

const INVALID: i64 = -(OpError::InvalidValue.code() as i64);

#[test]
fn without_stream_memory_operations_operations_still_run_in_order() {
    let gpu = MockGpu::new(1);
    gpu.faults().refuse_stream_waits();
    let g = guard(&gpu, &[]);
    let data = pattern(1 << 20, 3);
    let (_dir, f) = file_with(&data);
    let (file, dev, buffer) = registered(&g, &gpu, &f, 1 << 20);
    let s = gpu.stream_create().unwrap();
    let gate = hold(&gpu, s);
    // The first operation finds the wait refused: a host function waits for it instead.
    let first = file.read_async(&buffer, 512 << 10, 0, 0, s).unwrap();
    let second = file.read_async(&buffer, 512 << 10, 512 << 10, 512 << 10, s).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!((first.result(), second.result()), (None, None), "held by the stream");
    gate.store(true, Ordering::Release);
    gpu.stream_synchronize(s).unwrap();
    assert_eq!((first.result(), second.result()), (Some(512 << 10), Some(512 << 10)));
    let mut back = vec![0u8; 1 << 20];
    gpu.read_device(dev, &mut back).unwrap();
    assert!(back == data);
}

#[test]
fn the_rust_api_registers_streams_and_fixes_what_the_flags_say() {
    let gpu = MockGpu::new(1);
    let g = guard(&gpu, &[]);
    let data = pattern(64 << 10, 5);
    let (_dir, f) = file_with(&data);
    let (file, dev, buffer) = registered(&g, &gpu, &f, 64 << 10);
    let s = gpu.stream_create().unwrap();
    assert!(g.register_stream(s, 0x10).is_err());
    g.register_stream(s, STREAM_FIXED_FILE_SIZE | STREAM_FIXED_FILE_OFFSET).unwrap();
    assert!(g.register_stream(s, 0).is_err(), "twice");
    let gate = hold(&gpu, s);
    let io = file.read_async(&buffer, 16 << 10, 0, 0, s).unwrap();
    io.set_size(4096); // fixed: ignored
    io.set_file_offset(4096); // fixed: ignored
    io.set_buffer_offset(8192); // not fixed: used
    gate.store(true, Ordering::Release);
    gpu.stream_synchronize(s).unwrap();
    assert_eq!(io.result(), Some(16 << 10));
    let mut back = vec![0u8; 16 << 10];
    gpu.read_device(dev + 8192, &mut back).unwrap();
    assert!(back[..] == data[..16 << 10]);
    g.deregister_stream(s).unwrap();
    assert!(g.deregister_stream(s).is_err(), "not registered any more");
}

#[test]
fn many_threads_with_batches_and_stream_operations_on_little_staging_finish() {
    // 2 MiB of staging in 64 KiB lanes shared by 8 threads, each with its own stream and a
    // batch: stream operations and batch entries wait for lanes, never deadlock.
    let gpu = MockGpu::new(1);
    let g = guard(&gpu, &[("HIPFILE_BOUNCE_MEMORY_MIB", "2"), ("HIPFILE_BOUNCE_THREADS", "4")]);
    const REGION: usize = 2 << 20;
    const THREADS: usize = 8;
    let data = pattern(THREADS * REGION, 7);
    let (_dir, f) = file_with(&data);
    let (_odir, out) = file_with(&vec![0u8; THREADS * REGION]);
    let input = g.register_file(&f).unwrap();
    let output = g.register_file(&out).unwrap();
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (g, gpu, data, input, output) = (&g, &gpu, &data, &input, &output);
            scope.spawn(move || {
                let dev = gpu.malloc(REGION).unwrap();
                let buffer = g.register_buffer(dev, REGION).unwrap();
                let s = gpu.stream_create().unwrap();
                let batch = g.batch(32).unwrap();
                let base = (t * REGION) as u64;
                for round in 0..4 {
                    // Half of the region by stream operations of 64-320 KiB, half by a batch.
                    let mut ios = Vec::new();
                    let mut at = 0;
                    while at < REGION / 2 {
                        let size = ((64 << 10) * (1 + (at / 4096 + round) % 5)).min(REGION / 2 - at);
                        ios.push((
                            file_read_or_write(input, output, round, &buffer, size, base + at as u64, at, s),
                            size,
                        ));
                        at += size;
                    }
                    let entries: Vec<BatchEntry> = (0..16)
                        .map(|i| {
                            let at = REGION / 2 + i * (REGION / 32);
                            BatchEntry {
                                direction: if round.is_multiple_of(2) { Direction::Read } else { Direction::Write },
                                handle: if round.is_multiple_of(2) { input.id() } else { output.id() },
                                buffer_base: dev,
                                buffer_offset: at as i64,
                                file_offset: (base as usize + at) as i64,
                                size: REGION / 32,
                                cookie: i,
                            }
                        })
                        .collect();
                    // SAFETY: the entries name registered device memory, no host memory.
                    unsafe { batch.submit(&entries) }.unwrap();
                    let events = batch.status(16, 16, None).unwrap();
                    assert!(events.iter().all(|e| e.result == Ok(REGION / 32)), "{events:?}");
                    gpu.stream_synchronize(s).unwrap();
                    assert!(ios.iter().all(|(io, size)| io.result() == Some(*size as i64)));
                    if round.is_multiple_of(2) {
                        let mut back = vec![0u8; REGION];
                        gpu.read_device(dev, &mut back).unwrap();
                        assert!(back[..] == data[t * REGION..(t + 1) * REGION], "thread {t} round {round}");
                    }
                }
                gpu.stream_destroy(s).unwrap();
            });
        }
    });
    assert!(contents(&out) == data, "every write copied what the read before it had read");
}

/// A read (even rounds) from `input` or a write (odd rounds) to `output` on stream `s`.
#[allow(clippy::too_many_arguments)]
fn file_read_or_write(
    input: &hipfile::RegisteredFile<'_, SystemPlatform>,
    output: &hipfile::RegisteredFile<'_, SystemPlatform>,
    round: usize,
    buffer: &hipfile::RegisteredBuffer<'_, SystemPlatform>,
    size: usize,
    file_offset: u64,
    buffer_offset: usize,
    s: Stream,
) -> Arc<hipfile::StreamIo> {
    if round.is_multiple_of(2) {
        input.read_async(buffer, size, file_offset, buffer_offset as u64, s).unwrap()
    } else {
        output.write_async(buffer, size, file_offset, buffer_offset as u64, s).unwrap()
    }
}

mod model {
    //! Random operations on three streams, each on slots of its own, some held by a host
    //! function while their values change, against a model applied in each stream's order.
    use super::*;
    use proptest::prelude::*;

    const STREAMS: usize = 3;
    const SLOTS: usize = 4; // per stream
    const SLOT: usize = 16 << 10;

    #[derive(Clone, Debug)]
    struct Op {
        stream: usize,
        write: bool,
        /// Slot of the file and of the buffer, within the stream's.
        file_slot: usize,
        buf_slot: usize,
        len: usize,
        /// Held while the size becomes this (larger: fails; smaller: runs shrunk).
        resize: Option<usize>,
    }

    fn op() -> impl Strategy<Value = Op> {
        (0..STREAMS, any::<bool>(), 0..SLOTS, 0..SLOTS, 1..=SLOT, proptest::option::weighted(0.3, 1..=SLOT + 4096))
            .prop_map(|(stream, write, file_slot, buf_slot, len, resize)| Op {
                stream,
                write,
                file_slot,
                buf_slot,
                len,
                resize,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn stream_operations_match_the_model(
            signal in prop_oneof![Just("hostfn"), Just("event"), Just("inline")],
            flags in proptest::collection::vec(0u32..8, STREAMS),
            ops in proptest::collection::vec(op(), 1..32),
        ) {
            let gpu = MockGpu::new(1);
            let g = guard(&gpu, &[("HIPFILE_STREAM_SIGNAL", signal)]);
            let len = STREAMS * SLOTS * SLOT;
            let mut file_model = pattern(len, 5);
            let (_dir, f) = file_with(&file_model);
            let file = g.register_file(&f).unwrap();
            let dev = gpu.malloc(len).unwrap();
            let buffer = g.register_buffer(dev, len).unwrap();
            let mut dev_model = pattern(len, 77);
            gpu.write_device(dev, &dev_model).unwrap();
            let streams: Vec<Stream> = (0..STREAMS).map(|_| gpu.stream_create().unwrap()).collect();
            for (s, f) in streams.iter().zip(&flags) {
                g.register_stream(*s, *f).unwrap();
            }
            let mut issued = Vec::new();
            for op in &ops {
                let s = streams[op.stream];
                let slot = |i: usize| (op.stream * SLOTS + i) * SLOT;
                let (fo, bo) = (slot(op.file_slot), slot(op.buf_slot));
                let gate = op.resize.map(|_| hold(&gpu, s));
                let io = if op.write {
                    file.write_async(&buffer, op.len, fo as u64, bo as u64, s)
                } else {
                    file.read_async(&buffer, op.len, fo as u64, bo as u64, s)
                }.unwrap();
                let mut run = op.len;
                if let (Some(gate), Some(resize)) = (gate, op.resize) {
                    io.set_size(resize);
                    if flags[op.stream] & STREAM_FIXED_FILE_SIZE == 0 {
                        run = resize;
                    }
                    gate.store(true, Ordering::Release);
                }
                // The model, in the stream's order (streams touch their own slots only).
                let expect = if run > op.len {
                    INVALID
                } else {
                    if op.write {
                        file_model[fo..fo + run].copy_from_slice(&dev_model[bo..bo + run]);
                    } else {
                        dev_model[bo..bo + run].copy_from_slice(&file_model[fo..fo + run]);
                    }
                    run as i64
                };
                issued.push((io, expect));
            }
            for s in &streams {
                gpu.stream_synchronize(*s).unwrap();
            }
            for (i, (io, expect)) in issued.iter().enumerate() {
                prop_assert_eq!(io.result(), Some(*expect), "operation {}: {:?}", i, ops[i]);
            }
            let mut device = vec![0u8; len];
            gpu.read_device(dev, &mut device).unwrap();
            prop_assert!(device == dev_model, "device memory differs from the model");
            prop_assert!(contents(&f) == file_model, "the file differs from the model");
            for s in streams {
                g.deregister_stream(s).unwrap();
                gpu.stream_destroy(s).unwrap();
            }
        }
    }
}
