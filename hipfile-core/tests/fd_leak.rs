//! No file descriptor leaks: registration opens two descriptors of its own per file (buffered
//! and direct; it never does I/O on the caller's), and every
//! way a registration ends (deregistration, the driver closing to zero, the driver being
//! dropped) closes it. Alone in its binary so no other test opens files meanwhile.

mod common;

use hipfile_core::Direction;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn registrations_close_what_they_open() {
    let (_dir, file) = common::file_with(&common::pattern(8192, 1));
    let baseline = open_fds();
    for round in 0..3 {
        let (gpu, d) = common::driver(&[]);
        let files: Vec<_> = (0..50).map(|_| file.try_clone().unwrap()).collect();
        let after_clones = open_fds();
        let handles: Vec<_> = files.iter().map(|f| d.handle_register(f).unwrap()).collect();
        let dev = gpu.malloc(8192).unwrap();
        for h in &handles {
            // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
            assert_eq!(unsafe { d.transfer(Direction::Read, *h, dev, 8192, 0, 0) }.unwrap(), 8192);
            // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
            assert_eq!(unsafe { d.transfer(Direction::Read, *h, dev, 100, 1, 1) }.unwrap(), 100);
        }
        assert!(open_fds() <= after_clones + 2 * 50, "at most two descriptors per file");
        match round {
            0 => handles.iter().for_each(|h| d.handle_deregister(*h).unwrap()),
            1 => d.close().unwrap(),
            _ => drop(d),
        }
        assert_eq!(open_fds(), after_clones, "round {round}");
        drop(files);
        assert_eq!(open_fds(), baseline, "round {round}");
    }
}
