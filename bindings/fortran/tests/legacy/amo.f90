! The atomics of shmem.fh under contention, with exact totals: every PE
! hits PE 0's counters ITERS times with SHMEM_INT4/INT8_ADD, _INC, _FADD,
! _FINC and a SHMEM_INT4/INT8_CSWAP retry loop; the values a fetching
! routine returns are checked too (each PE's are increasing, and all of
! them together are every value the counter passed through). SHMEM_SWAP,
! SHMEM_INT4/INT8/REAL4/REAL8_SWAP pass unique tokens through PE 0: the
! values returned and the last one left are each token once. SHMEM_*_SET
! and SHMEM_*_FETCH go to the right neighbour.
program amo
  implicit none
  include 'shmem.fh'
  ! The functions' types, declared by the program as shmem.fh expects.
  integer :: shmem_my_pe, shmem_n_pes, shmem_swap
  integer(kind=4) :: shmem_int4_fadd, shmem_int4_finc, shmem_int4_cswap, shmem_int4_swap, shmem_int4_fetch
  integer(kind=8) :: shmem_int8_fadd, shmem_int8_finc, shmem_int8_cswap, shmem_int8_swap, shmem_int8_fetch
  real(kind=4) :: shmem_real4_swap, shmem_real4_fetch
  real(kind=8) :: shmem_real8_swap, shmem_real8_fetch
  integer, parameter :: iters = 200
  integer :: me, npes, right, j, total
  ! PE 0's counters, static and symmetric.
  integer(kind=8) :: add8, inc8, fadd8, finc8, cas8
  integer(kind=4) :: add4, inc4, fadd4, finc4, cas4
  common /counters/ add8, inc8, fadd8, finc8, cas8, add4, inc4, fadd4, finc4, cas4
  integer :: tok
  integer(kind=4) :: tok4
  integer(kind=8) :: tok8
  real(kind=4) :: tokr4
  real(kind=8) :: tokr8
  common /tokens/ tok8, tokr8, tok, tok4, tokr4
  integer(kind=4), save :: v4
  integer(kind=8), save :: v8
  real(kind=4), save :: r4
  real(kind=8), save :: r8
  ! What each PE saw, gathered on every PE by the sums below.
  integer(kind=8), save :: seen(9), seen_all(9), pwrk(32)
  integer, save :: psync(SHMEM_REDUCE_SYNC_SIZE)
  integer(kind=4) :: old4, prev4, got4
  integer(kind=8) :: old8, prev8, got8
  real(kind=4) :: gotr4
  real(kind=8) :: gotr8
  integer :: got, n
  integer(kind=8) :: t8, want8

  call shmem_init()
  me = shmem_my_pe()
  npes = shmem_n_pes()
  right = mod(me + 1, npes)
  psync = SHMEM_SYNC_VALUE
  add4 = 0; inc4 = 0; fadd4 = 0; finc4 = 0; cas4 = 0
  add8 = 0; inc8 = 0; fadd8 = 0; finc8 = 0; cas8 = 0
  tok = -1; tok4 = -1; tok8 = -1; tokr4 = -1.0; tokr8 = -1.0d0
  seen = 0
  call shmem_barrier_all()

  prev4 = -1
  prev8 = -1
  do j = 1, iters
    call shmem_int4_add(add4, int(me + 1, 4), 0)
    call shmem_int8_add(add8, int(me + 1, 8) * 1000000000_8, 0)
    call shmem_int4_inc(inc4, 0)
    call shmem_int8_inc(inc8, 0)
    old4 = shmem_int4_fadd(fadd4, 1_4, 0)
    if (old4 <= prev4) call fail('SHMEM_INT4_FADD returned a value it returned before')
    prev4 = old4
    seen(1) = seen(1) + old4
    old8 = shmem_int8_finc(finc8, 0)
    seen(2) = seen(2) + old8
    old4 = shmem_int4_finc(finc4, 0)
    seen(3) = seen(3) + old4
    old8 = shmem_int8_fadd(fadd8, 3_8, 0)
    if (old8 <= prev8) call fail('SHMEM_INT8_FADD returned a value it returned before')
    prev8 = old8
    seen(4) = seen(4) + old8
    ! Compare-and-swap increments: retry until this PE's swap wins.
    old4 = shmem_int4_fetch(cas4, 0)
    do
      got4 = shmem_int4_cswap(cas4, old4, old4 + 1_4, 0)
      if (got4 == old4) exit
      old4 = got4
    end do
    old8 = shmem_int8_fetch(cas8, 0)
    do
      got8 = shmem_int8_cswap(cas8, old8, old8 + 1_8, 0)
      if (got8 == old8) exit
      old8 = got8
    end do
    ! Swaps: this PE's unique token in, the previous holder's out.
    got = shmem_swap(tok, me * iters + j, 0)
    seen(5) = seen(5) + got
    got8 = shmem_int8_swap(tok8, int(me * iters + j, 8), 0)
    seen(6) = seen(6) + got8
    got4 = shmem_int4_swap(tok4, int(me * iters + j, 4), 0)
    seen(7) = seen(7) + got4
    gotr4 = shmem_real4_swap(tokr4, real(me * iters + j, 4), 0)
    seen(8) = seen(8) + nint(gotr4, 8)
    gotr8 = shmem_real8_swap(tokr8, real(me * iters + j, 8), 0)
    seen(9) = seen(9) + nint(gotr8, 8)
  end do
  call shmem_barrier_all()

  n = iters * npes
  if (me == 0) then
    if (add4 /= iters * npes * (npes + 1) / 2) call fail('SHMEM_INT4_ADD total')
    if (add8 /= int(iters, 8) * npes * (npes + 1) / 2 * 1000000000_8) call fail('SHMEM_INT8_ADD total')
    if (inc4 /= n) call fail('SHMEM_INT4_INC total')
    if (inc8 /= n) call fail('SHMEM_INT8_INC total')
    if (fadd4 /= n) call fail('SHMEM_INT4_FADD total')
    if (finc8 /= n) call fail('SHMEM_INT8_FINC total')
    if (finc4 /= n) call fail('SHMEM_INT4_FINC total')
    if (fadd8 /= 3 * n) call fail('SHMEM_INT8_FADD total')
    if (cas4 /= n) call fail('SHMEM_INT4_CSWAP total')
    if (cas8 /= n) call fail('SHMEM_INT8_CSWAP total')
  end if

  ! The old values, summed over every PE: each value the counter passed
  ! through, once. The tokens: the initial -1 and every token but the last
  ! one left in PE 0's variable (tokens are me * iters + j: 1 .. n).
  call shmem_int8_sum_to_all(seen_all, seen, 9, 0, 0, npes, pwrk, psync)
  t8 = int(n, 8) * (n - 1) / 2
  if (seen_all(1) /= t8) call fail('SHMEM_INT4_FADD old values')
  if (seen_all(2) /= t8) call fail('SHMEM_INT8_FINC old values')
  if (seen_all(3) /= t8) call fail('SHMEM_INT4_FINC old values')
  if (seen_all(4) /= 3 * t8) call fail('SHMEM_INT8_FADD old values')
  want8 = int(n, 8) * (n + 1) / 2 - 1
  if (me == 0) then
    if (seen_all(5) + tok /= want8) call fail('SHMEM_SWAP tokens')
    if (seen_all(6) + tok8 /= want8) call fail('SHMEM_INT8_SWAP tokens')
    if (seen_all(7) + tok4 /= want8) call fail('SHMEM_INT4_SWAP tokens')
    if (seen_all(8) + nint(tokr4, 8) /= want8) call fail('SHMEM_REAL4_SWAP tokens')
    if (seen_all(9) + nint(tokr8, 8) /= want8) call fail('SHMEM_REAL8_SWAP tokens')
  end if

  ! SET to the right neighbour, FETCH from it.
  v4 = -1; v8 = -1; r4 = -1.0; r8 = -1.0d0
  call shmem_barrier_all()
  call shmem_int4_set(v4, int(me + 10, 4), right)
  call shmem_int8_set(v8, int(me, 8) * 4294967296_8 + 5_8, right)
  call shmem_real4_set(r4, real(me, 4) + 0.5, right)
  call shmem_real8_set(r8, real(me, 8) + 0.25d0, right)
  call shmem_barrier_all()
  total = mod(me + npes - 1, npes)
  if (v4 /= total + 10) call fail('SHMEM_INT4_SET')
  if (v8 /= int(total, 8) * 4294967296_8 + 5_8) call fail('SHMEM_INT8_SET')
  if (r4 /= real(total, 4) + 0.5) call fail('SHMEM_REAL4_SET')
  if (r8 /= real(total, 8) + 0.25d0) call fail('SHMEM_REAL8_SET')
  if (shmem_int4_fetch(v4, right) /= me + 10) call fail('SHMEM_INT4_FETCH')
  if (shmem_int8_fetch(v8, right) /= int(me, 8) * 4294967296_8 + 5_8) call fail('SHMEM_INT8_FETCH')
  if (shmem_real4_fetch(r4, right) /= real(me, 4) + 0.5) call fail('SHMEM_REAL4_FETCH')
  if (shmem_real8_fetch(r8, right) /= real(me, 8) + 0.25d0) call fail('SHMEM_REAL8_FETCH')
  call shmem_barrier_all()
  print *, 'PE', me, ': OK'
  call shmem_finalize()

contains

  subroutine fail(what)
    character(len=*), intent(in) :: what
    print *, 'PE', me, ': FAILED ', what
    call shmem_global_exit(1)
  end subroutine fail
end program amo
