program ring
  use shmem
  implicit none
  integer(c_int), save :: from_left = -1     ! static data is symmetric, as in C
  integer(c_int) :: me, n
  call shmem_init()
  me = shmem_my_pe()
  n = shmem_n_pes()
  call shmem_p(from_left, me, modulo(me + 1, n))
  call shmem_barrier_all()
  print *, me, "got", from_left
  call shmem_finalize()
end program ring
