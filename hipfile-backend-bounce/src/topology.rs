//! Where each GPU sits in the machine: the NUMA node its PCI device hangs off, read from sysfs
//! (`/sys/bus/pci/devices/<address>/numa_node`), and that node's CPUs
//! (`/sys/devices/system/node/node<N>/cpulist`).
//!
//! On a machine with more than one node, a device's staging memory is placed on its node
//! (`mbind`, preferred: the kernel may still fall back elsewhere rather than fail) and the
//! threads that work for it run on that node's CPUs, so the bytes cross the socket link at most
//! once (page cache to staging) instead of twice (and the DMA reads local memory). On a machine
//! with one node, or where the node of a device is unknown (a VM that hides it: `numa_node` is
//! -1), nothing is placed: threads run anywhere and memory comes from wherever the kernel puts
//! it, as before.

use std::collections::BTreeMap;
use std::path::Path;

/// The NUMA nodes of the machine and their CPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Topology {
    nodes: BTreeMap<u32, Vec<usize>>,
}

/// What the backend does for one device: where its staging memory and threads go, if anywhere.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The node to place staging memory on.
    pub(crate) node: Option<u32>,
    /// The CPUs the device's worker threads run on (empty: anywhere).
    pub(crate) cpus: Vec<usize>,
}

impl Topology {
    /// The machine's topology, read under `sysfs` (`/sys` on a real machine; a directory laid
    /// out the same way in tests). No node directory: one node, as far as placement goes.
    pub(crate) fn read(sysfs: &Path) -> Topology {
        let mut nodes = BTreeMap::new();
        let Ok(entries) = std::fs::read_dir(sysfs.join("devices/system/node")) else { return Topology { nodes } };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_prefix("node")).and_then(|n| n.parse().ok()) else {
                continue;
            };
            let cpus = std::fs::read_to_string(entry.path().join("cpulist")).ok().and_then(|l| parse_cpu_list(&l));
            if let Some(cpus) = cpus.filter(|c| !c.is_empty()) {
                nodes.insert(id, cpus);
            }
        }
        Topology { nodes }
    }

    /// The placement of the device at PCI address `bus_id` (as the runtime writes it).
    pub(crate) fn placement(&self, sysfs: &Path, bus_id: Option<&str>) -> Placement {
        if self.nodes.len() < 2 {
            return Placement::default();
        }
        let node = bus_id.and_then(normalize_bus_id).and_then(|id| {
            let text = std::fs::read_to_string(sysfs.join("bus/pci/devices").join(id).join("numa_node")).ok()?;
            u32::try_from(text.trim().parse::<i64>().ok()?).ok()
        });
        match node.and_then(|n| self.nodes.get(&n).map(|cpus| (n, cpus))) {
            Some((n, cpus)) => Placement { node: Some(n), cpus: cpus.clone() },
            None => Placement::default(),
        }
    }
}

/// `0-3,8-11` as CPU numbers; `None` when malformed.
pub(crate) fn parse_cpu_list(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if a > b {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

/// A PCI address as sysfs names it (`0000:1b:00.0`): runtimes write the bus in upper case, and
/// CUDA writes the domain with 8 digits.
fn normalize_bus_id(id: &str) -> Option<String> {
    let (domain, rest) = id.trim().split_once(':')?;
    let (bus, rest) = rest.split_once(':')?;
    let (device, function) = rest.split_once('.')?;
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    Some(format!("{:04x}:{:02x}:{:02x}.{:x}", hex(domain)?, hex(bus)?, hex(device)?, hex(function)?))
}

/// Binds the calling thread to `cpus` (nothing when empty or when the kernel refuses: placement
/// is an optimisation, never a failure).
pub(crate) fn pin_thread(cpus: &[usize]) {
    if cpus.is_empty() {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: `cpu` is below CPU_SETSIZE, inside the set.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size given; 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
}

/// Asks the kernel to take the pages of `[addr, addr + len)` (a fresh mapping, not touched yet)
/// from `node` where it can (`MPOL_PREFERRED`). Nothing when refused.
pub(crate) fn prefer_node(addr: *mut u8, len: usize, node: u32) {
    const MPOL_PREFERRED: libc::c_long = 1;
    if node >= 128 {
        return;
    }
    let mut mask = [0u64; 2];
    mask[node as usize / 64] |= 1 << (node % 64);
    // SAFETY: the range is a mapping the caller owns; `mask` holds 128 bits, and the kernel
    // reads `maxnode - 1` of them.
    unsafe { libc::syscall(libc::SYS_mbind, addr, len, MPOL_PREFERRED, mask.as_ptr(), 129usize, 0u32) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs tree with `nodes` (id, cpulist) and PCI devices (address, numa_node).
    fn fake_sysfs(nodes: &[(u32, &str)], devices: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (id, cpus) in nodes {
            let node = dir.path().join(format!("devices/system/node/node{id}"));
            std::fs::create_dir_all(&node).unwrap();
            std::fs::write(node.join("cpulist"), format!("{cpus}\n")).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("devices/system/node/possible-not-a-node")).unwrap();
        for (addr, node) in devices {
            let dev = dir.path().join("bus/pci/devices").join(addr);
            std::fs::create_dir_all(&dev).unwrap();
            std::fs::write(dev.join("numa_node"), format!("{node}\n")).unwrap();
        }
        dir
    }

    #[test]
    fn two_sockets_place_each_gpu_on_its_node() {
        let sys = fake_sysfs(
            &[(0, "0-15,32-47"), (1, "16-31,48-63")],
            &[("0000:1b:00.0", "0"), ("0000:9a:00.0", "1"), ("0000:c3:00.0", "-1")],
        );
        let topo = Topology::read(sys.path());
        let near0 = topo.placement(sys.path(), Some("00000000:1B:00.0")); // CUDA's spelling
        assert_eq!(near0.node, Some(0));
        assert_eq!(near0.cpus, (0..16).chain(32..48).collect::<Vec<_>>());
        let near1 = topo.placement(sys.path(), Some("0000:9a:00.0"));
        assert_eq!((near1.node, near1.cpus.len(), near1.cpus[0]), (Some(1), 32, 16));
        // Unknown node (-1), unknown device, no address: no placement.
        for id in [Some("0000:c3:00.0"), Some("0000:01:00.0"), None, Some("garbage")] {
            assert_eq!(topo.placement(sys.path(), id), Placement::default(), "{id:?}");
        }
    }

    #[test]
    fn one_node_or_none_places_nothing() {
        let one = fake_sysfs(&[(0, "0-31")], &[("0000:1b:00.0", "0")]);
        assert_eq!(Topology::read(one.path()).placement(one.path(), Some("0000:1b:00.0")), Placement::default());
        let none = tempfile::tempdir().unwrap();
        assert_eq!(Topology::read(none.path()), Topology::default());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn this_machine_reads_without_failing() {
        let topo = Topology::read(Path::new("/sys"));
        assert!(topo.nodes.values().all(|cpus| !cpus.is_empty()));
    }
}
