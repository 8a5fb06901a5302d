#!/bin/sh
# The guest's whole init (PID 1): no systemd, no udev, no services. It mounts what a program needs, brings
# up the one network card (QEMU's user network: the guest is 10.0.2.15, the host side's loopback service is
# reached at 10.0.2.100), mounts the disks the harness gives it, runs the boot's script and powers off.
#   vda  this system, read-only
#   vdb  the host's data (state directory and --root), ext4 mounted with commit=60 so that a power cut
#        finds up to a minute of writes not yet committed, as a laptop's root has
#   vdc  the tools of this run (this init, mesh-host, node, the check), ext4, read-only: the system's own
#        init mounted it at /opt/mesh and ran this
#   vdd  this boot's script and files, a tar archive read as it is
# Every line the harness waits on starts with MESH-GUEST: (the serial console has the firmware's escape
# codes before the guest's first line, so the harness matches the marker anywhere on a line).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
# The initramfs moved /dev onto the root already (and loaded every module the guest needs); the rest is
# mounted here.
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# The unified cgroup hierarchy, where a container engine (podman with its cgroupfs manager: no systemd
# here) makes each container's group.
mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo 1 >/proc/sys/kernel/sysrq
# Dirty pages stay in memory for up to a minute (the kernel's default is 30 s, ext4's commit 5 s): the
# window in which a power cut loses what was written and not synced.
echo 6000 >/proc/sys/vm/dirty_expire_centisecs
echo 6000 >/proc/sys/vm/dirty_writeback_centisecs
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
mkdir -p /run/boot
mount -o commit=60 /dev/vdb /data || echo 'MESH-GUEST:fail the data disk did not mount'
tar -x -f /dev/vdd -C /run/boot || echo 'MESH-GUEST:fail the boot archive could not be read'
echo "MESH-GUEST:up $(cut -d' ' -f1 /proc/uptime)"
sh /run/boot/run.sh
echo "MESH-GUEST:done $?"
# A clean stop: everything written reaches the disk before the power goes.
sync
umount /data
echo o >/proc/sysrq-trigger
sleep 60
