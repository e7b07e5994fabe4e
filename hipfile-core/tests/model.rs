//! A property test: random sequences of open/close/register/deregister/read/write against a
//! reference model (a byte vector for the file, one per device buffer), comparing every byte
//! and every result, in hipFile's C conventions.

mod common;

use std::fs::File;
use std::sync::Arc;

use hipfile_backend_mock::{MockGpu, MockPlatform};
use hipfile_core::Direction;
use hipfile_core::error::{SsizeResult, ssize_result};
use hipfile_core::{Driver, HandleId};
use proptest::prelude::*;
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};

const BUFFERS: usize = 3;
const BUF_SIZE: usize = 16384;
const FILE_SPAN: u64 = 40_000;

#[derive(Clone, Debug)]
enum Step {
    Open,
    Close,
    RegisterHandle,
    DeregisterHandle,
    /// I/O through a handle that was deregistered (or never existed).
    ReadStale,
    RegisterBuffer {
        buf: usize,
        len: usize,
    },
    DeregisterBuffer {
        buf: usize,
    },
    Read {
        buf: usize,
        size: usize,
        file_offset: i64,
        buffer_offset: i64,
    },
    Write {
        buf: usize,
        size: usize,
        file_offset: i64,
        buffer_offset: i64,
    },
}

#[derive(Clone, Debug)]
struct Model {
    use_count: i64,
    file: Vec<u8>,
    handle: bool,
    /// Registered length of each buffer, if registered.
    registered: [Option<usize>; BUFFERS],
    buffers: Vec<Vec<u8>>,
}

impl Model {
    fn implicit_open(&mut self) {
        self.use_count = self.use_count.max(1);
    }

    /// The expected result of an I/O step, applying it to the model.
    fn io(&mut self, write: bool, buf: usize, size: usize, file_offset: i64, buffer_offset: i64) -> Result<usize, i32> {
        const EINVAL: i32 = -(libc::EINVAL + 100_000); // errno results, told apart from codes
        if self.use_count == 0 {
            return Err(EINVAL);
        }
        if !self.handle {
            return Err(5027);
        }
        if file_offset < 0 || buffer_offset < 0 {
            return Err(EINVAL);
        }
        let len = self.registered[buf].unwrap_or(BUF_SIZE);
        let (off, boff) = (file_offset as usize, buffer_offset as usize);
        if boff >= len || size > len - boff {
            return Err(5022);
        }
        if size == 0 || (!write && off >= self.file.len()) {
            return Ok(0);
        }
        if write {
            if self.file.len() < off + size {
                self.file.resize(off + size, 0);
            }
            self.file[off..off + size].copy_from_slice(&self.buffers[buf][boff..boff + size]);
            Ok(size)
        } else {
            let n = size.min(self.file.len().saturating_sub(off));
            self.buffers[buf][boff..boff + n].copy_from_slice(&self.file[off..off + n]);
            Ok(n)
        }
    }
}

/// Offsets and sizes that are sometimes direct-aligned and sometimes not, so both mock paths run.
fn amount(max: u64) -> impl Strategy<Value = u64> {
    prop_oneof![(0..=max / 4096).prop_map(|k| k * 4096), 0..=max, Just(0)]
}

fn offset(max: u64) -> impl Strategy<Value = i64> {
    prop_oneof![8 => amount(max).prop_map(|v| v as i64), 1 => Just(-1i64), 1 => Just(-4096i64)]
}

struct Reference;

impl ReferenceStateMachine for Reference {
    type State = Model;
    type Transition = Step;

    fn init_state() -> BoxedStrategy<Model> {
        proptest::collection::vec(any::<u8>(), 0..20_000)
            .prop_map(|file| Model {
                use_count: 0,
                file,
                handle: false,
                registered: [None; BUFFERS],
                buffers: (0..BUFFERS).map(|i| common::pattern(BUF_SIZE, i as u8 + 100)).collect(),
            })
            .boxed()
    }

    fn transitions(_: &Model) -> BoxedStrategy<Step> {
        let buf = 0..BUFFERS;
        let io = || (0..BUFFERS, amount(BUF_SIZE as u64 + 100), offset(FILE_SPAN), offset(BUF_SIZE as u64));
        prop_oneof![
            1 => Just(Step::Open),
            1 => Just(Step::Close),
            2 => Just(Step::RegisterHandle),
            1 => Just(Step::DeregisterHandle),
            1 => Just(Step::ReadStale),
            2 => (buf.clone(), prop_oneof![Just(BUF_SIZE), 1..=BUF_SIZE + 1]).prop_map(|(buf, len)| Step::RegisterBuffer { buf, len }),
            1 => buf.prop_map(|buf| Step::DeregisterBuffer { buf }),
            6 => io().prop_map(|(buf, s, f, b)| Step::Read { buf, size: s as usize, file_offset: f, buffer_offset: b }),
            6 => io().prop_map(|(buf, s, f, b)| Step::Write { buf, size: s as usize, file_offset: f, buffer_offset: b }),
        ]
        .boxed()
    }

    fn apply(mut m: Model, step: &Step) -> Model {
        match step {
            Step::Open => m.use_count += 1,
            Step::Close if m.use_count > 0 => {
                m.use_count -= 1;
                if m.use_count == 0 {
                    m.handle = false;
                    m.registered = [None; BUFFERS];
                }
            }
            Step::RegisterHandle => {
                m.implicit_open();
                m.handle = true;
            }
            Step::DeregisterHandle => m.handle = false,
            Step::RegisterBuffer { buf, len } => {
                m.implicit_open();
                if m.registered[*buf].is_none() && *len <= BUF_SIZE {
                    m.registered[*buf] = Some(*len);
                }
            }
            Step::DeregisterBuffer { buf } if m.use_count > 0 => m.registered[*buf] = None,
            Step::Read { buf, size, file_offset, buffer_offset } => {
                let _ = m.io(false, *buf, *size, *file_offset, *buffer_offset);
            }
            Step::Write { buf, size, file_offset, buffer_offset } => {
                let _ = m.io(true, *buf, *size, *file_offset, *buffer_offset);
            }
            _ => {}
        }
        m
    }
}

struct System {
    gpu: Arc<MockGpu>,
    driver: Driver<MockPlatform>,
    _dir: tempfile::TempDir,
    file: File,
    handle: Option<HandleId>,
    stale: Vec<HandleId>,
    buffers: Vec<usize>,
    /// The model before the step being applied (the runner passes the one after it).
    before: Model,
}

/// The C view of a result: what the model predicts.
fn c_view(r: &hipfile_core::Result<usize>) -> Result<usize, i32> {
    match ssize_result(r) {
        SsizeResult { value, errno: None } if value >= 0 => Ok(value as usize),
        SsizeResult { errno: Some(e), .. } => Err(-(e + 100_000)),
        SsizeResult { value, .. } => Err(-value as i32),
    }
}

fn code(r: hipfile_core::Result<()>) -> i32 {
    r.map_or_else(|e| e.to_c_pair().0, |()| 0)
}

impl StateMachineTest for System {
    type SystemUnderTest = System;
    type Reference = Reference;

    fn init_test(m: &Model) -> System {
        let (gpu, driver) = common::driver(&[]);
        let (dir, file) = common::file_with(&m.file);
        let buffers = m
            .buffers
            .iter()
            .map(|b| {
                let dev = gpu.malloc(BUF_SIZE).unwrap();
                gpu.write_device(dev, b).unwrap();
                dev
            })
            .collect();
        System {
            gpu,
            driver,
            _dir: dir,
            file,
            handle: None,
            stale: vec![HandleId(0xdead_beef)],
            buffers,
            before: m.clone(),
        }
    }

    fn apply(mut s: System, after: &Model, step: Step) -> System {
        let m = &std::mem::replace(&mut s.before, after.clone());
        match step {
            Step::Open => s.driver.open().unwrap(),
            Step::Close => {
                let r = s.driver.close();
                assert_eq!(code(r), if m.use_count == 0 { 5001 } else { 0 });
                if m.use_count == 1 {
                    s.stale.extend(s.handle.take());
                }
            }
            Step::RegisterHandle => match s.driver.handle_register(&s.file) {
                Ok(h) => {
                    assert!(s.handle.is_none(), "registered twice");
                    s.handle = Some(h);
                }
                Err(e) => assert_eq!((e.to_c_pair().0, s.handle.is_some()), (5028, true)),
            },
            Step::DeregisterHandle => {
                let r = s
                    .handle
                    .map_or(Err(hipfile_core::OpError::HandleNotRegistered.into()), |h| s.driver.handle_deregister(h));
                assert_eq!(code(r), if m.handle { 0 } else { 5027 });
                s.stale.extend(s.handle.take());
            }
            Step::ReadStale => {
                let stale = *s.stale.last().unwrap();
                let expect = if m.use_count == 0 { Err(-(libc::EINVAL + 100_000)) } else { Err(5027) };
                assert_eq!(
                    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
                    c_view(&unsafe { s.driver.transfer(Direction::Read, stale, s.buffers[0], 1, 0, 0) }),
                    expect
                );
            }
            Step::RegisterBuffer { buf, len } => {
                let expect = if m.registered[buf].is_some() {
                    5023
                } else if len > BUF_SIZE {
                    5014
                } else {
                    0
                };
                assert_eq!(code(s.driver.buf_register(s.buffers[buf], len, 0)), expect);
            }
            Step::DeregisterBuffer { buf } => {
                let expect = if m.use_count == 0 {
                    5006
                } else if m.registered[buf].is_none() {
                    5024
                } else {
                    0
                };
                assert_eq!(code(s.driver.buf_deregister(s.buffers[buf])), expect);
            }
            Step::Read { buf, size, file_offset, buffer_offset }
            | Step::Write { buf, size, file_offset, buffer_offset } => {
                let write = matches!(step, Step::Write { .. });
                let expect = m.clone().io(write, buf, size, file_offset, buffer_offset);
                let h = s.handle.unwrap_or(HandleId(1));
                let got = if write {
                    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
                    unsafe { s.driver.transfer(Direction::Write, h, s.buffers[buf], size, file_offset, buffer_offset) }
                } else {
                    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
                    unsafe { s.driver.transfer(Direction::Read, h, s.buffers[buf], size, file_offset, buffer_offset) }
                };
                assert_eq!(c_view(&got), expect, "{step:?}");
            }
        }
        s
    }

    fn check_invariants(s: &System, m: &Model) {
        assert_eq!(s.driver.use_count(), m.use_count);
        assert!(common::contents(&s.file) == m.file, "file contents differ from the model");
        let mut got = vec![0; BUF_SIZE];
        for (i, dev) in s.buffers.iter().enumerate() {
            s.gpu.read_device(*dev, &mut got).unwrap();
            assert!(got == m.buffers[i], "device buffer {i} differs from the model");
        }
    }
}

prop_state_machine! {
    #![proptest_config(ProptestConfig { cases: 64, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn driver_matches_the_reference_model(sequential 1..40 => System);
}
