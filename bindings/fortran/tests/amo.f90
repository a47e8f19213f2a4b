! Atomics on integer(c_int) and integer(c_long) under contention: every PE hits PE 0's
! counters many times with fetch_add, add, inc and fetch_inc, races to claim slots with
! compare_swap (each slot has exactly one winner), and passes a token around with swap; fetch
! and set are checked on values whose owner is known.
module amo_data
  use, intrinsic :: iso_c_binding
  implicit none
  integer(c_int) :: icount = 0, islot(64) = -1, iv = 0
  integer(c_long) :: lcount = 0, lslot(64) = -1, lv = 0
end module amo_data

program amo
  use shmem
  use amo_data
  implicit none
  integer, parameter :: iters = 500
  integer(c_int) :: me, np, k, old, wins, total, right
  integer(c_long) :: lold, lwins
  integer(c_int), pointer :: hcount
  type(c_ptr) :: p

  call shmem_init()
  me = shmem_my_pe()
  np = shmem_n_pes()
  right = modulo(me + 1, np)
  p = shmem_calloc(1_c_size_t, 4_c_size_t)
  call c_f_pointer(p, hcount)
  call shmem_barrier_all()

  ! Counters: each PE adds 1 + 2 + 1 + 1 per round to each counter on PE 0.
  do k = 1, iters
    old = shmem_int_atomic_fetch_add(icount, 1_c_int, 0)
    if (old < 0 .or. old >= 5 * iters * np) error stop "int fetch_add returned a value out of range"
    call shmem_int_atomic_add(icount, 2_c_int, 0)
    call shmem_atomic_inc(icount, 0)
    old = shmem_atomic_fetch_inc(icount, 0)
    lold = shmem_atomic_fetch_add(lcount, 3000000000_c_long, 0)
    if (lold < 0) error stop "long fetch_add returned a negative value"
    call shmem_atomic_add(lcount, 1_c_long, 0)
    call shmem_long_atomic_inc(lcount, 0)
    lold = shmem_long_atomic_fetch_inc(lcount, 0)
    call shmem_int_atomic_inc(hcount, 0)
  end do
  call shmem_barrier_all()
  if (me == 0) then
    if (icount /= 5 * iters * np) error stop "int counter lost updates"
    if (lcount /= (3000000000_c_long + 3) * iters * np) error stop "long counter lost updates"
    if (hcount /= iters * np) error stop "heap counter lost updates"
  end if
  if (shmem_int_atomic_fetch(icount, 0) /= 5 * iters * np) error stop "int fetch"
  if (shmem_atomic_fetch(lcount, 0) /= (3000000000_c_long + 3) * iters * np) error stop "long fetch"
  call shmem_barrier_all()

  ! Compare-swap races: every PE tries to claim every slot on PE 0; one winner per slot.
  wins = 0
  lwins = 0
  do k = 1, size(islot)
    if (shmem_int_atomic_compare_swap(islot(k), -1_c_int, me, 0) == -1) wins = wins + 1
    if (shmem_atomic_compare_swap(lslot(k), -1_c_long, int(me, c_long), 0) == -1) lwins = lwins + 1
  end do
  call shmem_barrier_all()
  if (me == 0) then
    if (any(islot < 0 .or. islot >= np)) error stop "int compare_swap left a slot unclaimed"
    if (any(lslot < 0 .or. lslot >= np)) error stop "long compare_swap left a slot unclaimed"
  end if
  total = 0
  do k = 1, size(islot)
    if (shmem_int_atomic_fetch(islot(k), 0) == me) total = total + 1
  end do
  if (total /= wins) error stop "int compare_swap: wins differ from the slots owned"
  total = 0
  do k = 1, size(lslot)
    if (shmem_long_atomic_fetch(lslot(k), 0) == me) total = total + 1
  end do
  if (total /= lwins) error stop "long compare_swap: wins differ from the slots owned"
  call shmem_barrier_all()

  ! set, then swap: each PE sets its right neighbour's values, then swaps them back.
  call shmem_int_atomic_set(iv, 10 * me, right)
  call shmem_atomic_set(lv, 10_c_long * me, right)
  call shmem_barrier_all()
  if (iv /= 10 * modulo(me - 1, np) .or. lv /= 10_c_long * modulo(me - 1, np)) error stop "set"
  call shmem_barrier_all()
  if (shmem_int_atomic_swap(iv, -me, right) /= 10 * me) error stop "int swap returned the wrong value"
  if (shmem_atomic_swap(lv, -int(me, c_long), right) /= 10_c_long * me) error stop "long swap returned the wrong value"
  call shmem_barrier_all()
  if (iv /= -modulo(me - 1, np) .or. lv /= -modulo(me - 1, np)) error stop "swap"

  call shmem_barrier_all()
  call shmem_free(c_loc(hcount))
  if (me == 0) print '(a, i0, a)', "amo: ok on ", np, " PEs"
  call shmem_finalize()
end program amo
