! The `shmem` module of oxshmem: OpenSHMEM 1.5 for Fortran, as `bind(C)` interfaces to the
! C library (liboxshmem), so a call costs what the C call costs.
!
! Compile with `oshfort`, which compiles this source once per compiler into a module folder and
! passes it with -I (module files only work with the compiler that wrote them). The module holds
! no code: programs link liboxshmem and nothing else.
!
! What is here: setup and queries, symmetric allocation (type(c_ptr), see c_f_pointer), RMA
! (put, get, their _nbi forms, iput/iget, p, g) for integer(c_int), integer(c_long),
! real(c_float) and real(c_double); atomics on integer(c_int) and integer(c_long); barrier_all,
! sync_all, fence, quiet; wait_until and test; teams' my_pe/n_pes/sync; broadcast, collect,
! fcollect, alltoall and sum/prod/max/min reductions (of scalars too, and of arrays of rank 1
! to 3: see the comment above them). Each typed routine has its C name
! (shmem_int_put, shmem_double_p, shmem_long_atomic_fetch_add, ...) and a generic name without
! the type (shmem_put, shmem_p, shmem_atomic_fetch_add, ...) that picks it by the kind of the
! first data argument.
!
! Rules the interfaces cannot check:
! - Symmetric objects are memory from shmem_malloc (and friends) or variables with static
!   storage in the main program: module variables, COMMON blocks and SAVE'd variables are
!   symmetric like C globals.
! - Pass whole contiguous arrays or array elements as `dest`: a non-contiguous section would be
!   copied to a temporary and the temporary's address sent to the peer.
! - Counts are integer(c_size_t) (write 4_c_size_t or int(n, c_size_t)); strides of iput/iget
!   are integer(c_ptrdiff_t).
! - A variable other PEs write and this PE reads in a loop without calling the library should
!   be VOLATILE; shmem_wait_until/shmem_test reread it on every poll.
! - SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED are the library's variables, valid after shmem_init.
!   Collectives return 0 on success.
!
! Values of the constants are those of shmem.h.

module shmem
  use, intrinsic :: iso_c_binding
  implicit none

  integer(c_int), parameter :: SHMEM_MAJOR_VERSION = 1
  integer(c_int), parameter :: SHMEM_MINOR_VERSION = 5
  integer(c_int), parameter :: SHMEM_MAX_NAME_LEN = 256

  integer(c_int), parameter :: SHMEM_THREAD_SINGLE = 0
  integer(c_int), parameter :: SHMEM_THREAD_FUNNELED = 1
  integer(c_int), parameter :: SHMEM_THREAD_SERIALIZED = 2
  integer(c_int), parameter :: SHMEM_THREAD_MULTIPLE = 3

  integer(c_int), parameter :: SHMEM_CMP_EQ = 0
  integer(c_int), parameter :: SHMEM_CMP_NE = 1
  integer(c_int), parameter :: SHMEM_CMP_GT = 2
  integer(c_int), parameter :: SHMEM_CMP_GE = 3
  integer(c_int), parameter :: SHMEM_CMP_LT = 4
  integer(c_int), parameter :: SHMEM_CMP_LE = 5

  ! Teams: handles are C pointers; SHMEM_TEAM_INVALID is the null one (test with c_associated).
  type(c_ptr), parameter :: SHMEM_TEAM_INVALID = c_null_ptr
  type(c_ptr), bind(C, name="SHMEM_TEAM_WORLD") :: shmem_team_world
  type(c_ptr), bind(C, name="SHMEM_TEAM_SHARED") :: shmem_team_shared

  interface
    ! Setup, exit and queries.
    subroutine shmem_init() bind(C, name="shmem_init")
    end subroutine shmem_init
    function shmem_init_thread(requested, provided) bind(C, name="shmem_init_thread")
      import
      integer(c_int), value :: requested
      integer(c_int), intent(out) :: provided
      integer(c_int) :: shmem_init_thread
    end function shmem_init_thread
    subroutine shmem_finalize() bind(C, name="shmem_finalize")
    end subroutine shmem_finalize
    subroutine shmem_global_exit(status) bind(C, name="shmem_global_exit")
      import
      integer(c_int), value :: status
    end subroutine shmem_global_exit
    integer(c_int) function shmem_my_pe() bind(C, name="shmem_my_pe")
      import
    end function shmem_my_pe
    integer(c_int) function shmem_n_pes() bind(C, name="shmem_n_pes")
      import
    end function shmem_n_pes
    integer(c_int) function shmem_pe_accessible(pe) bind(C, name="shmem_pe_accessible")
      import
      integer(c_int), value :: pe
    end function shmem_pe_accessible
    subroutine shmem_info_get_version(major, minor) bind(C, name="shmem_info_get_version")
      import
      integer(c_int), intent(out) :: major, minor
    end subroutine shmem_info_get_version

    ! Symmetric memory. Collective: every PE makes the same calls in the same order.
    type(c_ptr) function shmem_malloc(size) bind(C, name="shmem_malloc")
      import
      integer(c_size_t), value :: size
    end function shmem_malloc
    type(c_ptr) function shmem_calloc(count, size) bind(C, name="shmem_calloc")
      import
      integer(c_size_t), value :: count, size
    end function shmem_calloc
    type(c_ptr) function shmem_align(alignment, size) bind(C, name="shmem_align")
      import
      integer(c_size_t), value :: alignment, size
    end function shmem_align
    type(c_ptr) function shmem_realloc(ptr, size) bind(C, name="shmem_realloc")
      import
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: size
    end function shmem_realloc
    subroutine shmem_free(ptr) bind(C, name="shmem_free")
      import
      type(c_ptr), value :: ptr
    end subroutine shmem_free
    integer(c_int) function shmem_addr_accessible(addr, pe) bind(C, name="shmem_addr_accessible")
      import
      type(c_ptr), value :: addr
      integer(c_int), value :: pe
    end function shmem_addr_accessible
    type(c_ptr) function shmem_ptr(dest, pe) bind(C, name="shmem_ptr")
      import
      type(c_ptr), value :: dest
      integer(c_int), value :: pe
    end function shmem_ptr

    ! Untyped RMA on addresses (c_loc of a TARGET symmetric object); nelems is in bytes.
    subroutine shmem_putmem(dest, source, nelems, pe) bind(C, name="shmem_putmem")
      import
      type(c_ptr), value :: dest, source
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_putmem
    subroutine shmem_getmem(dest, source, nelems, pe) bind(C, name="shmem_getmem")
      import
      type(c_ptr), value :: dest, source
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_getmem

    ! Ordering and synchronization.
    subroutine shmem_barrier_all() bind(C, name="shmem_barrier_all")
    end subroutine shmem_barrier_all
    subroutine shmem_sync_all() bind(C, name="shmem_sync_all")
    end subroutine shmem_sync_all
    subroutine shmem_fence() bind(C, name="shmem_fence")
    end subroutine shmem_fence
    subroutine shmem_quiet() bind(C, name="shmem_quiet")
    end subroutine shmem_quiet

    ! Teams.
    integer(c_int) function shmem_team_my_pe(team) bind(C, name="shmem_team_my_pe")
      import
      type(c_ptr), value :: team
    end function shmem_team_my_pe
    integer(c_int) function shmem_team_n_pes(team) bind(C, name="shmem_team_n_pes")
      import
      type(c_ptr), value :: team
    end function shmem_team_n_pes
    integer(c_int) function shmem_team_sync(team) bind(C, name="shmem_team_sync")
      import
      type(c_ptr), value :: team
    end function shmem_team_sync
  end interface

  ! Typed routines, one generic name per family.

  interface shmem_put
    subroutine shmem_int_put(dest, source, nelems, pe) bind(C, name="shmem_int_put")
      import
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_int_put
    subroutine shmem_long_put(dest, source, nelems, pe) bind(C, name="shmem_long_put")
      import
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_long_put
    subroutine shmem_float_put(dest, source, nelems, pe) bind(C, name="shmem_float_put")
      import
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_float_put
    subroutine shmem_double_put(dest, source, nelems, pe) bind(C, name="shmem_double_put")
      import
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_double_put
  end interface shmem_put

  interface shmem_get
    subroutine shmem_int_get(dest, source, nelems, pe) bind(C, name="shmem_int_get")
      import
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_int_get
    subroutine shmem_long_get(dest, source, nelems, pe) bind(C, name="shmem_long_get")
      import
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_long_get
    subroutine shmem_float_get(dest, source, nelems, pe) bind(C, name="shmem_float_get")
      import
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_float_get
    subroutine shmem_double_get(dest, source, nelems, pe) bind(C, name="shmem_double_get")
      import
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_double_get
  end interface shmem_get

  interface shmem_put_nbi
    subroutine shmem_int_put_nbi(dest, source, nelems, pe) bind(C, name="shmem_int_put_nbi")
      import
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_int_put_nbi
    subroutine shmem_long_put_nbi(dest, source, nelems, pe) bind(C, name="shmem_long_put_nbi")
      import
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_long_put_nbi
    subroutine shmem_float_put_nbi(dest, source, nelems, pe) bind(C, name="shmem_float_put_nbi")
      import
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_float_put_nbi
    subroutine shmem_double_put_nbi(dest, source, nelems, pe) bind(C, name="shmem_double_put_nbi")
      import
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_double_put_nbi
  end interface shmem_put_nbi

  interface shmem_get_nbi
    subroutine shmem_int_get_nbi(dest, source, nelems, pe) bind(C, name="shmem_int_get_nbi")
      import
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_int_get_nbi
    subroutine shmem_long_get_nbi(dest, source, nelems, pe) bind(C, name="shmem_long_get_nbi")
      import
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_long_get_nbi
    subroutine shmem_float_get_nbi(dest, source, nelems, pe) bind(C, name="shmem_float_get_nbi")
      import
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_float_get_nbi
    subroutine shmem_double_get_nbi(dest, source, nelems, pe) bind(C, name="shmem_double_get_nbi")
      import
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_double_get_nbi
  end interface shmem_get_nbi

  interface shmem_iput
    subroutine shmem_int_iput(dest, source, dst, sst, nelems, pe) bind(C, name="shmem_int_iput")
      import
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_ptrdiff_t), value :: dst, sst
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_int_iput
    subroutine shmem_long_iput(dest, source, dst, sst, nelems, pe) bind(C, name="shmem_long_iput")
      import
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_ptrdiff_t), value :: dst, sst
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_long_iput
    subroutine shmem_float_iput(dest, source, dst, sst, nelems, pe) bind(C, name="shmem_float_iput")
      import
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_ptrdiff_t), value :: dst, sst
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_float_iput
    subroutine shmem_double_iput(dest, source, dst, sst, nelems, pe) bind(C, name="shmem_double_iput")
      import
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_ptrdiff_t), value :: dst, sst
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_double_iput
  end interface shmem_iput

  interface shmem_iget
    subroutine shmem_int_iget(dest, source, dst, sst, nelems, pe) bind(C, name="shmem_int_iget")
      import
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_ptrdiff_t), value :: dst, sst
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_int_iget
    subroutine shmem_long_iget(dest, source, dst, sst, nelems, pe) bind(C, name="shmem_long_iget")
      import
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_ptrdiff_t), value :: dst, sst
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_long_iget
    subroutine shmem_float_iget(dest, source, dst, sst, nelems, pe) bind(C, name="shmem_float_iget")
      import
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_ptrdiff_t), value :: dst, sst
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_float_iget
    subroutine shmem_double_iget(dest, source, dst, sst, nelems, pe) bind(C, name="shmem_double_iget")
      import
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_ptrdiff_t), value :: dst, sst
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe
    end subroutine shmem_double_iget
  end interface shmem_iget

  interface shmem_p
    subroutine shmem_int_p(dest, value, pe) bind(C, name="shmem_int_p")
      import
      integer(c_int) :: dest
      integer(c_int), value :: value
      integer(c_int), value :: pe
    end subroutine shmem_int_p
    subroutine shmem_long_p(dest, value, pe) bind(C, name="shmem_long_p")
      import
      integer(c_long) :: dest
      integer(c_long), value :: value
      integer(c_int), value :: pe
    end subroutine shmem_long_p
    subroutine shmem_float_p(dest, value, pe) bind(C, name="shmem_float_p")
      import
      real(c_float) :: dest
      real(c_float), value :: value
      integer(c_int), value :: pe
    end subroutine shmem_float_p
    subroutine shmem_double_p(dest, value, pe) bind(C, name="shmem_double_p")
      import
      real(c_double) :: dest
      real(c_double), value :: value
      integer(c_int), value :: pe
    end subroutine shmem_double_p
  end interface shmem_p

  interface shmem_g
    integer(c_int) function shmem_int_g(source, pe) bind(C, name="shmem_int_g")
      import
      integer(c_int), intent(in) :: source
      integer(c_int), value :: pe
    end function shmem_int_g
    integer(c_long) function shmem_long_g(source, pe) bind(C, name="shmem_long_g")
      import
      integer(c_long), intent(in) :: source
      integer(c_int), value :: pe
    end function shmem_long_g
    real(c_float) function shmem_float_g(source, pe) bind(C, name="shmem_float_g")
      import
      real(c_float), intent(in) :: source
      integer(c_int), value :: pe
    end function shmem_float_g
    real(c_double) function shmem_double_g(source, pe) bind(C, name="shmem_double_g")
      import
      real(c_double), intent(in) :: source
      integer(c_int), value :: pe
    end function shmem_double_g
  end interface shmem_g

  interface shmem_atomic_fetch_add
    integer(c_int) function shmem_int_atomic_fetch_add(dest, value, pe) bind(C, name="shmem_int_atomic_fetch_add")
      import
      integer(c_int) :: dest
      integer(c_int), value :: value
      integer(c_int), value :: pe
    end function shmem_int_atomic_fetch_add
    integer(c_long) function shmem_long_atomic_fetch_add(dest, value, pe) bind(C, name="shmem_long_atomic_fetch_add")
      import
      integer(c_long) :: dest
      integer(c_long), value :: value
      integer(c_int), value :: pe
    end function shmem_long_atomic_fetch_add
  end interface shmem_atomic_fetch_add

  interface shmem_atomic_add
    subroutine shmem_int_atomic_add(dest, value, pe) bind(C, name="shmem_int_atomic_add")
      import
      integer(c_int) :: dest
      integer(c_int), value :: value
      integer(c_int), value :: pe
    end subroutine shmem_int_atomic_add
    subroutine shmem_long_atomic_add(dest, value, pe) bind(C, name="shmem_long_atomic_add")
      import
      integer(c_long) :: dest
      integer(c_long), value :: value
      integer(c_int), value :: pe
    end subroutine shmem_long_atomic_add
  end interface shmem_atomic_add

  interface shmem_atomic_fetch_inc
    integer(c_int) function shmem_int_atomic_fetch_inc(dest, pe) bind(C, name="shmem_int_atomic_fetch_inc")
      import
      integer(c_int) :: dest
      integer(c_int), value :: pe
    end function shmem_int_atomic_fetch_inc
    integer(c_long) function shmem_long_atomic_fetch_inc(dest, pe) bind(C, name="shmem_long_atomic_fetch_inc")
      import
      integer(c_long) :: dest
      integer(c_int), value :: pe
    end function shmem_long_atomic_fetch_inc
  end interface shmem_atomic_fetch_inc

  interface shmem_atomic_inc
    subroutine shmem_int_atomic_inc(dest, pe) bind(C, name="shmem_int_atomic_inc")
      import
      integer(c_int) :: dest
      integer(c_int), value :: pe
    end subroutine shmem_int_atomic_inc
    subroutine shmem_long_atomic_inc(dest, pe) bind(C, name="shmem_long_atomic_inc")
      import
      integer(c_long) :: dest
      integer(c_int), value :: pe
    end subroutine shmem_long_atomic_inc
  end interface shmem_atomic_inc

  interface shmem_atomic_compare_swap
    integer(c_int) function shmem_int_atomic_compare_swap(dest, cond, value, pe) bind(C, name="shmem_int_atomic_compare_swap")
      import
      integer(c_int) :: dest
      integer(c_int), value :: cond
      integer(c_int), value :: value
      integer(c_int), value :: pe
    end function shmem_int_atomic_compare_swap
    integer(c_long) function shmem_long_atomic_compare_swap(dest, cond, value, pe) bind(C, name="shmem_long_atomic_compare_swap")
      import
      integer(c_long) :: dest
      integer(c_long), value :: cond
      integer(c_long), value :: value
      integer(c_int), value :: pe
    end function shmem_long_atomic_compare_swap
  end interface shmem_atomic_compare_swap

  interface shmem_atomic_fetch
    integer(c_int) function shmem_int_atomic_fetch(source, pe) bind(C, name="shmem_int_atomic_fetch")
      import
      integer(c_int), intent(in) :: source
      integer(c_int), value :: pe
    end function shmem_int_atomic_fetch
    integer(c_long) function shmem_long_atomic_fetch(source, pe) bind(C, name="shmem_long_atomic_fetch")
      import
      integer(c_long), intent(in) :: source
      integer(c_int), value :: pe
    end function shmem_long_atomic_fetch
  end interface shmem_atomic_fetch

  interface shmem_atomic_set
    subroutine shmem_int_atomic_set(dest, value, pe) bind(C, name="shmem_int_atomic_set")
      import
      integer(c_int) :: dest
      integer(c_int), value :: value
      integer(c_int), value :: pe
    end subroutine shmem_int_atomic_set
    subroutine shmem_long_atomic_set(dest, value, pe) bind(C, name="shmem_long_atomic_set")
      import
      integer(c_long) :: dest
      integer(c_long), value :: value
      integer(c_int), value :: pe
    end subroutine shmem_long_atomic_set
  end interface shmem_atomic_set

  interface shmem_atomic_swap
    integer(c_int) function shmem_int_atomic_swap(dest, value, pe) bind(C, name="shmem_int_atomic_swap")
      import
      integer(c_int) :: dest
      integer(c_int), value :: value
      integer(c_int), value :: pe
    end function shmem_int_atomic_swap
    integer(c_long) function shmem_long_atomic_swap(dest, value, pe) bind(C, name="shmem_long_atomic_swap")
      import
      integer(c_long) :: dest
      integer(c_long), value :: value
      integer(c_int), value :: pe
    end function shmem_long_atomic_swap
  end interface shmem_atomic_swap

  interface shmem_wait_until
    subroutine shmem_int_wait_until(ivar, cmp, cmp_value) bind(C, name="shmem_int_wait_until")
      import
      integer(c_int) :: ivar
      integer(c_int), value :: cmp
      integer(c_int), value :: cmp_value
    end subroutine shmem_int_wait_until
    subroutine shmem_long_wait_until(ivar, cmp, cmp_value) bind(C, name="shmem_long_wait_until")
      import
      integer(c_long) :: ivar
      integer(c_int), value :: cmp
      integer(c_long), value :: cmp_value
    end subroutine shmem_long_wait_until
  end interface shmem_wait_until

  interface shmem_test
    integer(c_int) function shmem_int_test(ivar, cmp, cmp_value) bind(C, name="shmem_int_test")
      import
      integer(c_int) :: ivar
      integer(c_int), value :: cmp
      integer(c_int), value :: cmp_value
    end function shmem_int_test
    integer(c_int) function shmem_long_test(ivar, cmp, cmp_value) bind(C, name="shmem_long_test")
      import
      integer(c_long) :: ivar
      integer(c_int), value :: cmp
      integer(c_long), value :: cmp_value
    end function shmem_long_test
  end interface shmem_test

  interface shmem_broadcast
    integer(c_int) function shmem_int_broadcast(team, dest, source, nelems, pe_root) bind(C, name="shmem_int_broadcast")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe_root
    end function shmem_int_broadcast
    integer(c_int) function shmem_long_broadcast(team, dest, source, nelems, pe_root) bind(C, name="shmem_long_broadcast")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe_root
    end function shmem_long_broadcast
    integer(c_int) function shmem_float_broadcast(team, dest, source, nelems, pe_root) bind(C, name="shmem_float_broadcast")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe_root
    end function shmem_float_broadcast
    integer(c_int) function shmem_double_broadcast(team, dest, source, nelems, pe_root) bind(C, name="shmem_double_broadcast")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
      integer(c_int), value :: pe_root
    end function shmem_double_broadcast
  end interface shmem_broadcast

  interface shmem_collect
    integer(c_int) function shmem_int_collect(team, dest, source, nelems) bind(C, name="shmem_int_collect")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
    end function shmem_int_collect
    integer(c_int) function shmem_long_collect(team, dest, source, nelems) bind(C, name="shmem_long_collect")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
    end function shmem_long_collect
    integer(c_int) function shmem_float_collect(team, dest, source, nelems) bind(C, name="shmem_float_collect")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
    end function shmem_float_collect
    integer(c_int) function shmem_double_collect(team, dest, source, nelems) bind(C, name="shmem_double_collect")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
    end function shmem_double_collect
  end interface shmem_collect

  interface shmem_fcollect
    integer(c_int) function shmem_int_fcollect(team, dest, source, nelems) bind(C, name="shmem_int_fcollect")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
    end function shmem_int_fcollect
    integer(c_int) function shmem_long_fcollect(team, dest, source, nelems) bind(C, name="shmem_long_fcollect")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
    end function shmem_long_fcollect
    integer(c_int) function shmem_float_fcollect(team, dest, source, nelems) bind(C, name="shmem_float_fcollect")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
    end function shmem_float_fcollect
    integer(c_int) function shmem_double_fcollect(team, dest, source, nelems) bind(C, name="shmem_double_fcollect")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
    end function shmem_double_fcollect
  end interface shmem_fcollect

  interface shmem_alltoall
    integer(c_int) function shmem_int_alltoall(team, dest, source, nelems) bind(C, name="shmem_int_alltoall")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
    end function shmem_int_alltoall
    integer(c_int) function shmem_long_alltoall(team, dest, source, nelems) bind(C, name="shmem_long_alltoall")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
    end function shmem_long_alltoall
    integer(c_int) function shmem_float_alltoall(team, dest, source, nelems) bind(C, name="shmem_float_alltoall")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
    end function shmem_float_alltoall
    integer(c_int) function shmem_double_alltoall(team, dest, source, nelems) bind(C, name="shmem_double_alltoall")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nelems
    end function shmem_double_alltoall
  end interface shmem_alltoall

  ! Reductions. Each typed name (shmem_int_sum_reduce, ...) is a generic name over interfaces
  ! that all bind the same C function, so that `dest` and `source` may be scalars, array
  ! elements, or whole arrays of rank 1 to 3: Fortran refuses a scalar for an array dummy
  ! (`dest(*)`), and a generic name must match each argument's rank, so every accepted rank is
  ! a specific of its own. Only the address goes to C, as for `dest(*)`. The type-generic names
  ! (shmem_sum_reduce, ...) take the same forms. Arrays of rank 4 to 7: pass their first
  ! elements (`x(1, 1, 1, 1)`), which count as scalars here and are the address C needs.
  interface shmem_int_sum_reduce
    integer(c_int) function shmem_int_sum_reduce(team, dest, source, nreduce) bind(C, name="shmem_int_sum_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_int_sum_reduce
    integer(c_int) function shmem_int_sum_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_int_sum_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest
      integer(c_int), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_int_sum_reduce_s
    integer(c_int) function shmem_int_sum_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_int_sum_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_int_sum_reduce_sa
    integer(c_int) function shmem_int_sum_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_int_sum_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_int_sum_reduce_as
    integer(c_int) function shmem_int_sum_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_int_sum_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(1, *)
      integer(c_int), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_int_sum_reduce_2
    integer(c_int) function shmem_int_sum_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_int_sum_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(1, 1, *)
      integer(c_int), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_int_sum_reduce_3
  end interface shmem_int_sum_reduce

  interface shmem_long_sum_reduce
    integer(c_int) function shmem_long_sum_reduce(team, dest, source, nreduce) bind(C, name="shmem_long_sum_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_long_sum_reduce
    integer(c_int) function shmem_long_sum_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_long_sum_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest
      integer(c_long), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_long_sum_reduce_s
    integer(c_int) function shmem_long_sum_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_long_sum_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_long_sum_reduce_sa
    integer(c_int) function shmem_long_sum_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_long_sum_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_long_sum_reduce_as
    integer(c_int) function shmem_long_sum_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_long_sum_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(1, *)
      integer(c_long), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_long_sum_reduce_2
    integer(c_int) function shmem_long_sum_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_long_sum_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(1, 1, *)
      integer(c_long), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_long_sum_reduce_3
  end interface shmem_long_sum_reduce

  interface shmem_float_sum_reduce
    integer(c_int) function shmem_float_sum_reduce(team, dest, source, nreduce) bind(C, name="shmem_float_sum_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_float_sum_reduce
    integer(c_int) function shmem_float_sum_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_float_sum_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest
      real(c_float), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_float_sum_reduce_s
    integer(c_int) function shmem_float_sum_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_float_sum_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_float_sum_reduce_sa
    integer(c_int) function shmem_float_sum_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_float_sum_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_float_sum_reduce_as
    integer(c_int) function shmem_float_sum_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_float_sum_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(1, *)
      real(c_float), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_float_sum_reduce_2
    integer(c_int) function shmem_float_sum_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_float_sum_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(1, 1, *)
      real(c_float), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_float_sum_reduce_3
  end interface shmem_float_sum_reduce

  interface shmem_double_sum_reduce
    integer(c_int) function shmem_double_sum_reduce(team, dest, source, nreduce) bind(C, name="shmem_double_sum_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_double_sum_reduce
    integer(c_int) function shmem_double_sum_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_double_sum_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest
      real(c_double), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_double_sum_reduce_s
    integer(c_int) function shmem_double_sum_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_double_sum_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_double_sum_reduce_sa
    integer(c_int) function shmem_double_sum_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_double_sum_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_double_sum_reduce_as
    integer(c_int) function shmem_double_sum_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_double_sum_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(1, *)
      real(c_double), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_double_sum_reduce_2
    integer(c_int) function shmem_double_sum_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_double_sum_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(1, 1, *)
      real(c_double), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_double_sum_reduce_3
  end interface shmem_double_sum_reduce

  interface shmem_sum_reduce
    procedure :: shmem_int_sum_reduce, shmem_int_sum_reduce_s, shmem_int_sum_reduce_sa, &
                 shmem_int_sum_reduce_as, shmem_int_sum_reduce_2, shmem_int_sum_reduce_3
    procedure :: shmem_long_sum_reduce, shmem_long_sum_reduce_s, shmem_long_sum_reduce_sa, &
                 shmem_long_sum_reduce_as, shmem_long_sum_reduce_2, shmem_long_sum_reduce_3
    procedure :: shmem_float_sum_reduce, shmem_float_sum_reduce_s, shmem_float_sum_reduce_sa, &
                 shmem_float_sum_reduce_as, shmem_float_sum_reduce_2, shmem_float_sum_reduce_3
    procedure :: shmem_double_sum_reduce, shmem_double_sum_reduce_s, shmem_double_sum_reduce_sa, &
                 shmem_double_sum_reduce_as, shmem_double_sum_reduce_2, shmem_double_sum_reduce_3
  end interface shmem_sum_reduce

  interface shmem_int_prod_reduce
    integer(c_int) function shmem_int_prod_reduce(team, dest, source, nreduce) bind(C, name="shmem_int_prod_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_int_prod_reduce
    integer(c_int) function shmem_int_prod_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_int_prod_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest
      integer(c_int), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_int_prod_reduce_s
    integer(c_int) function shmem_int_prod_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_int_prod_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_int_prod_reduce_sa
    integer(c_int) function shmem_int_prod_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_int_prod_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_int_prod_reduce_as
    integer(c_int) function shmem_int_prod_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_int_prod_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(1, *)
      integer(c_int), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_int_prod_reduce_2
    integer(c_int) function shmem_int_prod_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_int_prod_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(1, 1, *)
      integer(c_int), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_int_prod_reduce_3
  end interface shmem_int_prod_reduce

  interface shmem_long_prod_reduce
    integer(c_int) function shmem_long_prod_reduce(team, dest, source, nreduce) bind(C, name="shmem_long_prod_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_long_prod_reduce
    integer(c_int) function shmem_long_prod_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_long_prod_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest
      integer(c_long), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_long_prod_reduce_s
    integer(c_int) function shmem_long_prod_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_long_prod_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_long_prod_reduce_sa
    integer(c_int) function shmem_long_prod_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_long_prod_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_long_prod_reduce_as
    integer(c_int) function shmem_long_prod_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_long_prod_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(1, *)
      integer(c_long), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_long_prod_reduce_2
    integer(c_int) function shmem_long_prod_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_long_prod_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(1, 1, *)
      integer(c_long), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_long_prod_reduce_3
  end interface shmem_long_prod_reduce

  interface shmem_float_prod_reduce
    integer(c_int) function shmem_float_prod_reduce(team, dest, source, nreduce) bind(C, name="shmem_float_prod_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_float_prod_reduce
    integer(c_int) function shmem_float_prod_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_float_prod_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest
      real(c_float), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_float_prod_reduce_s
    integer(c_int) function shmem_float_prod_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_float_prod_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_float_prod_reduce_sa
    integer(c_int) function shmem_float_prod_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_float_prod_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_float_prod_reduce_as
    integer(c_int) function shmem_float_prod_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_float_prod_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(1, *)
      real(c_float), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_float_prod_reduce_2
    integer(c_int) function shmem_float_prod_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_float_prod_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(1, 1, *)
      real(c_float), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_float_prod_reduce_3
  end interface shmem_float_prod_reduce

  interface shmem_double_prod_reduce
    integer(c_int) function shmem_double_prod_reduce(team, dest, source, nreduce) bind(C, name="shmem_double_prod_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_double_prod_reduce
    integer(c_int) function shmem_double_prod_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_double_prod_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest
      real(c_double), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_double_prod_reduce_s
    integer(c_int) function shmem_double_prod_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_double_prod_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_double_prod_reduce_sa
    integer(c_int) function shmem_double_prod_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_double_prod_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_double_prod_reduce_as
    integer(c_int) function shmem_double_prod_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_double_prod_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(1, *)
      real(c_double), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_double_prod_reduce_2
    integer(c_int) function shmem_double_prod_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_double_prod_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(1, 1, *)
      real(c_double), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_double_prod_reduce_3
  end interface shmem_double_prod_reduce

  interface shmem_prod_reduce
    procedure :: shmem_int_prod_reduce, shmem_int_prod_reduce_s, shmem_int_prod_reduce_sa, &
                 shmem_int_prod_reduce_as, shmem_int_prod_reduce_2, shmem_int_prod_reduce_3
    procedure :: shmem_long_prod_reduce, shmem_long_prod_reduce_s, shmem_long_prod_reduce_sa, &
                 shmem_long_prod_reduce_as, shmem_long_prod_reduce_2, shmem_long_prod_reduce_3
    procedure :: shmem_float_prod_reduce, shmem_float_prod_reduce_s, shmem_float_prod_reduce_sa, &
                 shmem_float_prod_reduce_as, shmem_float_prod_reduce_2, shmem_float_prod_reduce_3
    procedure :: shmem_double_prod_reduce, shmem_double_prod_reduce_s, shmem_double_prod_reduce_sa, &
                 shmem_double_prod_reduce_as, shmem_double_prod_reduce_2, shmem_double_prod_reduce_3
  end interface shmem_prod_reduce

  interface shmem_int_max_reduce
    integer(c_int) function shmem_int_max_reduce(team, dest, source, nreduce) bind(C, name="shmem_int_max_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_int_max_reduce
    integer(c_int) function shmem_int_max_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_int_max_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest
      integer(c_int), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_int_max_reduce_s
    integer(c_int) function shmem_int_max_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_int_max_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_int_max_reduce_sa
    integer(c_int) function shmem_int_max_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_int_max_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_int_max_reduce_as
    integer(c_int) function shmem_int_max_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_int_max_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(1, *)
      integer(c_int), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_int_max_reduce_2
    integer(c_int) function shmem_int_max_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_int_max_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(1, 1, *)
      integer(c_int), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_int_max_reduce_3
  end interface shmem_int_max_reduce

  interface shmem_long_max_reduce
    integer(c_int) function shmem_long_max_reduce(team, dest, source, nreduce) bind(C, name="shmem_long_max_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_long_max_reduce
    integer(c_int) function shmem_long_max_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_long_max_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest
      integer(c_long), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_long_max_reduce_s
    integer(c_int) function shmem_long_max_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_long_max_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_long_max_reduce_sa
    integer(c_int) function shmem_long_max_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_long_max_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_long_max_reduce_as
    integer(c_int) function shmem_long_max_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_long_max_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(1, *)
      integer(c_long), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_long_max_reduce_2
    integer(c_int) function shmem_long_max_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_long_max_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(1, 1, *)
      integer(c_long), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_long_max_reduce_3
  end interface shmem_long_max_reduce

  interface shmem_float_max_reduce
    integer(c_int) function shmem_float_max_reduce(team, dest, source, nreduce) bind(C, name="shmem_float_max_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_float_max_reduce
    integer(c_int) function shmem_float_max_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_float_max_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest
      real(c_float), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_float_max_reduce_s
    integer(c_int) function shmem_float_max_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_float_max_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_float_max_reduce_sa
    integer(c_int) function shmem_float_max_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_float_max_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_float_max_reduce_as
    integer(c_int) function shmem_float_max_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_float_max_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(1, *)
      real(c_float), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_float_max_reduce_2
    integer(c_int) function shmem_float_max_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_float_max_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(1, 1, *)
      real(c_float), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_float_max_reduce_3
  end interface shmem_float_max_reduce

  interface shmem_double_max_reduce
    integer(c_int) function shmem_double_max_reduce(team, dest, source, nreduce) bind(C, name="shmem_double_max_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_double_max_reduce
    integer(c_int) function shmem_double_max_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_double_max_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest
      real(c_double), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_double_max_reduce_s
    integer(c_int) function shmem_double_max_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_double_max_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_double_max_reduce_sa
    integer(c_int) function shmem_double_max_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_double_max_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_double_max_reduce_as
    integer(c_int) function shmem_double_max_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_double_max_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(1, *)
      real(c_double), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_double_max_reduce_2
    integer(c_int) function shmem_double_max_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_double_max_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(1, 1, *)
      real(c_double), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_double_max_reduce_3
  end interface shmem_double_max_reduce

  interface shmem_max_reduce
    procedure :: shmem_int_max_reduce, shmem_int_max_reduce_s, shmem_int_max_reduce_sa, &
                 shmem_int_max_reduce_as, shmem_int_max_reduce_2, shmem_int_max_reduce_3
    procedure :: shmem_long_max_reduce, shmem_long_max_reduce_s, shmem_long_max_reduce_sa, &
                 shmem_long_max_reduce_as, shmem_long_max_reduce_2, shmem_long_max_reduce_3
    procedure :: shmem_float_max_reduce, shmem_float_max_reduce_s, shmem_float_max_reduce_sa, &
                 shmem_float_max_reduce_as, shmem_float_max_reduce_2, shmem_float_max_reduce_3
    procedure :: shmem_double_max_reduce, shmem_double_max_reduce_s, shmem_double_max_reduce_sa, &
                 shmem_double_max_reduce_as, shmem_double_max_reduce_2, shmem_double_max_reduce_3
  end interface shmem_max_reduce

  interface shmem_int_min_reduce
    integer(c_int) function shmem_int_min_reduce(team, dest, source, nreduce) bind(C, name="shmem_int_min_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_int_min_reduce
    integer(c_int) function shmem_int_min_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_int_min_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest
      integer(c_int), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_int_min_reduce_s
    integer(c_int) function shmem_int_min_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_int_min_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest
      integer(c_int), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_int_min_reduce_sa
    integer(c_int) function shmem_int_min_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_int_min_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(*)
      integer(c_int), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_int_min_reduce_as
    integer(c_int) function shmem_int_min_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_int_min_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(1, *)
      integer(c_int), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_int_min_reduce_2
    integer(c_int) function shmem_int_min_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_int_min_reduce")
      import
      type(c_ptr), value :: team
      integer(c_int) :: dest(1, 1, *)
      integer(c_int), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_int_min_reduce_3
  end interface shmem_int_min_reduce

  interface shmem_long_min_reduce
    integer(c_int) function shmem_long_min_reduce(team, dest, source, nreduce) bind(C, name="shmem_long_min_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_long_min_reduce
    integer(c_int) function shmem_long_min_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_long_min_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest
      integer(c_long), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_long_min_reduce_s
    integer(c_int) function shmem_long_min_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_long_min_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest
      integer(c_long), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_long_min_reduce_sa
    integer(c_int) function shmem_long_min_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_long_min_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(*)
      integer(c_long), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_long_min_reduce_as
    integer(c_int) function shmem_long_min_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_long_min_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(1, *)
      integer(c_long), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_long_min_reduce_2
    integer(c_int) function shmem_long_min_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_long_min_reduce")
      import
      type(c_ptr), value :: team
      integer(c_long) :: dest(1, 1, *)
      integer(c_long), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_long_min_reduce_3
  end interface shmem_long_min_reduce

  interface shmem_float_min_reduce
    integer(c_int) function shmem_float_min_reduce(team, dest, source, nreduce) bind(C, name="shmem_float_min_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_float_min_reduce
    integer(c_int) function shmem_float_min_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_float_min_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest
      real(c_float), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_float_min_reduce_s
    integer(c_int) function shmem_float_min_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_float_min_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest
      real(c_float), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_float_min_reduce_sa
    integer(c_int) function shmem_float_min_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_float_min_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(*)
      real(c_float), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_float_min_reduce_as
    integer(c_int) function shmem_float_min_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_float_min_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(1, *)
      real(c_float), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_float_min_reduce_2
    integer(c_int) function shmem_float_min_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_float_min_reduce")
      import
      type(c_ptr), value :: team
      real(c_float) :: dest(1, 1, *)
      real(c_float), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_float_min_reduce_3
  end interface shmem_float_min_reduce

  interface shmem_double_min_reduce
    integer(c_int) function shmem_double_min_reduce(team, dest, source, nreduce) bind(C, name="shmem_double_min_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_double_min_reduce
    integer(c_int) function shmem_double_min_reduce_s(team, dest, source, nreduce) bind(C, name="shmem_double_min_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest
      real(c_double), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_double_min_reduce_s
    integer(c_int) function shmem_double_min_reduce_sa(team, dest, source, nreduce) bind(C, name="shmem_double_min_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest
      real(c_double), intent(in) :: source(*)
      integer(c_size_t), value :: nreduce
    end function shmem_double_min_reduce_sa
    integer(c_int) function shmem_double_min_reduce_as(team, dest, source, nreduce) bind(C, name="shmem_double_min_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(*)
      real(c_double), intent(in) :: source
      integer(c_size_t), value :: nreduce
    end function shmem_double_min_reduce_as
    integer(c_int) function shmem_double_min_reduce_2(team, dest, source, nreduce) bind(C, name="shmem_double_min_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(1, *)
      real(c_double), intent(in) :: source(1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_double_min_reduce_2
    integer(c_int) function shmem_double_min_reduce_3(team, dest, source, nreduce) bind(C, name="shmem_double_min_reduce")
      import
      type(c_ptr), value :: team
      real(c_double) :: dest(1, 1, *)
      real(c_double), intent(in) :: source(1, 1, *)
      integer(c_size_t), value :: nreduce
    end function shmem_double_min_reduce_3
  end interface shmem_double_min_reduce

  interface shmem_min_reduce
    procedure :: shmem_int_min_reduce, shmem_int_min_reduce_s, shmem_int_min_reduce_sa, &
                 shmem_int_min_reduce_as, shmem_int_min_reduce_2, shmem_int_min_reduce_3
    procedure :: shmem_long_min_reduce, shmem_long_min_reduce_s, shmem_long_min_reduce_sa, &
                 shmem_long_min_reduce_as, shmem_long_min_reduce_2, shmem_long_min_reduce_3
    procedure :: shmem_float_min_reduce, shmem_float_min_reduce_s, shmem_float_min_reduce_sa, &
                 shmem_float_min_reduce_as, shmem_float_min_reduce_2, shmem_float_min_reduce_3
    procedure :: shmem_double_min_reduce, shmem_double_min_reduce_s, shmem_double_min_reduce_sa, &
                 shmem_double_min_reduce_as, shmem_double_min_reduce_2, shmem_double_min_reduce_3
  end interface shmem_min_reduce

end module shmem
