! The active-set collectives of shmem.fh, in fixed form, every element
! checked: SHMEM_BROADCAST4/8/32/64 (the root's dest untouched),
! SHMEM_COLLECT4/8/32/64 (PE m gives m+1 elements), SHMEM_FCOLLECT4/8/
! 32/64, SHMEM_ALLTOALL32/64, SHMEM_ALLTOALLS32/64 (strided), over every
! PE, then SHMEM_BARRIER, SHMEM_BROADCAST64 and SHMEM_FCOLLECT32 over the
! even and the odd PEs (logPE_stride 1) at the same time.
      PROGRAM COLL
      IMPLICIT NONE
      INCLUDE 'shmem.fh'
      INTEGER SHMEM_MY_PE, SHMEM_N_PES
      INTEGER MAXP, M
      PARAMETER (MAXP = 16, M = 3)
      INTEGER ME, NPES, I, J, K, ROOT, POS, START, SIZE, IDX, NXT
      INTEGER PSB(SHMEM_BCAST_SYNC_SIZE), PSC(SHMEM_COLLECT_SYNC_SIZE)
      INTEGER PSA(SHMEM_ALLTOALL_SYNC_SIZE)
      INTEGER PSS(SHMEM_ALLTOALLS_SYNC_SIZE)
      INTEGER PSBAR(SHMEM_BARRIER_SYNC_SIZE)
      SAVE PSB, PSC, PSA, PSS, PSBAR
      INTEGER*4 S4(3 * MAXP), D4(3 * MAXP * MAXP)
      INTEGER*8 S8(3 * MAXP), D8(3 * MAXP * MAXP)
      REAL*4 S32(3 * MAXP), D32(3 * MAXP * MAXP)
      REAL*8 S64(3 * MAXP), D64(3 * MAXP * MAXP)
      COMMON /BUF4/ S4, D4, S32, D32
      COMMON /BUF8/ S8, D8, S64, D64
      INTEGER FLAG
      SAVE FLAG

      CALL SHMEM_INIT()
      ME = SHMEM_MY_PE()
      NPES = SHMEM_N_PES()
      IF (NPES .GT. MAXP) CALL FAIL(ME, 'too many PEs for this test')
      DO I = 1, SHMEM_BCAST_SYNC_SIZE
        PSB(I) = SHMEM_SYNC_VALUE
        PSC(I) = SHMEM_SYNC_VALUE
        PSA(I) = SHMEM_SYNC_VALUE
        PSS(I) = SHMEM_SYNC_VALUE
        PSBAR(I) = SHMEM_SYNC_VALUE
      END DO

! Broadcast from active-set member 1 (PE 1) to everyone else.
      ROOT = 1
      CALL RESET(ME)
      CALL SHMEM_BROADCAST4(D4, S4, M, ROOT, 0, 0, NPES, PSB)
      CALL SHMEM_BROADCAST8(D8, S8, M, ROOT, 0, 0, NPES, PSB)
      CALL SHMEM_BROADCAST32(D32, S32, M, ROOT, 0, 0, NPES, PSB)
      CALL SHMEM_BROADCAST64(D64, S64, M, ROOT, 0, 0, NPES, PSB)
      DO K = 1, M
        IF (ME .EQ. ROOT) THEN
          IF (D4(K) .NE. -1 .OR. D8(K) .NE. -1 .OR. D32(K) .NE. -1.0
     &        .OR. D64(K) .NE. -1.0D0)
     &      CALL FAIL(ME, 'SHMEM_BROADCAST wrote the root''s dest')
        ELSE
          IF (D4(K) .NE. IV(ROOT, K)) CALL FAIL(ME, 'BROADCAST4')
          IF (D8(K) .NE. KV(ROOT, K)) CALL FAIL(ME, 'BROADCAST8')
          IF (D32(K) .NE. RV(ROOT, K)) CALL FAIL(ME, 'BROADCAST32')
          IF (D64(K) .NE. DV(ROOT, K)) CALL FAIL(ME, 'BROADCAST64')
        END IF
      END DO

! Collect: PE J gives J+1 elements, concatenated in PE order.
      CALL RESET(ME)
      CALL SHMEM_COLLECT4(D4, S4, ME + 1, 0, 0, NPES, PSC)
      CALL SHMEM_COLLECT8(D8, S8, ME + 1, 0, 0, NPES, PSC)
      CALL SHMEM_COLLECT32(D32, S32, ME + 1, 0, 0, NPES, PSC)
      CALL SHMEM_COLLECT64(D64, S64, ME + 1, 0, 0, NPES, PSC)
      POS = 0
      DO J = 0, NPES - 1
        DO K = 1, J + 1
          POS = POS + 1
          IF (D4(POS) .NE. IV(J, K)) CALL FAIL(ME, 'SHMEM_COLLECT4')
          IF (D8(POS) .NE. KV(J, K)) CALL FAIL(ME, 'SHMEM_COLLECT8')
          IF (D32(POS) .NE. RV(J, K)) CALL FAIL(ME, 'SHMEM_COLLECT32')
          IF (D64(POS) .NE. DV(J, K)) CALL FAIL(ME, 'SHMEM_COLLECT64')
        END DO
      END DO
      IF (D4(POS + 1) .NE. -1) CALL FAIL(ME, 'SHMEM_COLLECT4 overran')

! Fixed collect: M elements from every PE.
      CALL RESET(ME)
      CALL SHMEM_FCOLLECT4(D4, S4, M, 0, 0, NPES, PSC)
      CALL SHMEM_FCOLLECT8(D8, S8, M, 0, 0, NPES, PSC)
      CALL SHMEM_FCOLLECT32(D32, S32, M, 0, 0, NPES, PSC)
      CALL SHMEM_FCOLLECT64(D64, S64, M, 0, 0, NPES, PSC)
      DO J = 0, NPES - 1
        DO K = 1, M
          POS = J * M + K
          IF (D4(POS) .NE. IV(J, K)) CALL FAIL(ME, 'SHMEM_FCOLLECT4')
          IF (D8(POS) .NE. KV(J, K)) CALL FAIL(ME, 'SHMEM_FCOLLECT8')
          IF (D32(POS) .NE. RV(J, K)) CALL FAIL(ME, 'SHMEM_FCOLLECT32')
          IF (D64(POS) .NE. DV(J, K)) CALL FAIL(ME, 'SHMEM_FCOLLECT64')
        END DO
      END DO

! Alltoall: block J of PE I (M elements, value I*1000+J*10+K) lands in
! block I of PE J.
      CALL RESET(ME)
      DO J = 0, NPES - 1
        DO K = 1, M
          S4(J * M + K) = ME * 1000 + J * 10 + K
          S8(J * M + K) = ME * 1000 + J * 10 + K
        END DO
      END DO
      CALL SHMEM_BARRIER_ALL()
      CALL SHMEM_ALLTOALL32(D4, S4, M, 0, 0, NPES, PSA)
      CALL SHMEM_ALLTOALL64(D8, S8, M, 0, 0, NPES, PSA)
      DO I = 0, NPES - 1
        DO K = 1, M
          IF (D4(I * M + K) .NE. I * 1000 + ME * 10 + K)
     &      CALL FAIL(ME, 'SHMEM_ALLTOALL32')
          IF (D8(I * M + K) .NE. I * 1000 + ME * 10 + K)
     &      CALL FAIL(ME, 'SHMEM_ALLTOALL64')
        END DO
      END DO

! Strided alltoall: source stride 3, dest stride 2 (in elements).
      CALL RESET(ME)
      DO J = 0, NPES - 1
        DO K = 1, M
          IDX = (J * M + K - 1) * 3 + 1
          S32(IDX) = REAL(ME * 1000 + J * 10 + K)
          S64(IDX) = DBLE(ME * 1000 + J * 10 + K)
        END DO
      END DO
      CALL SHMEM_BARRIER_ALL()
      CALL SHMEM_ALLTOALLS32(D32, S32, 2, 3, M, 0, 0, NPES, PSS)
      CALL SHMEM_ALLTOALLS64(D64, S64, 2, 3, M, 0, 0, NPES, PSS)
      DO I = 0, NPES - 1
        DO K = 1, M
          IDX = (I * M + K - 1) * 2 + 1
          IF (D32(IDX) .NE. REAL(I * 1000 + ME * 10 + K))
     &      CALL FAIL(ME, 'SHMEM_ALLTOALLS32')
          IF (D64(IDX) .NE. DBLE(I * 1000 + ME * 10 + K))
     &      CALL FAIL(ME, 'SHMEM_ALLTOALLS64')
          IF (D32(IDX + 1) .NE. -1.0 .OR. D64(IDX + 1) .NE. -1.0D0)
     &      CALL FAIL(ME, 'SHMEM_ALLTOALLS wrote between the strides')
        END DO
      END DO

! The even PEs and the odd PEs, each its own active set (logPE_stride
! 1): a put around the set's ring, SHMEM_BARRIER, then broadcast from
! member 0 and fixed collect within the set.
      START = MOD(ME, 2)
      SIZE = (NPES - START + 1) / 2
      CALL RESET(ME)
      FLAG = -1
      CALL SHMEM_BARRIER_ALL()
      NXT = START + MOD((ME - START) / 2 + 1, SIZE) * 2
      CALL SHMEM_INTEGER_PUT(FLAG, ME, 1, NXT)
      CALL SHMEM_BARRIER(START, 1, SIZE, PSBAR)
      J = START + MOD((ME - START) / 2 + SIZE - 1, SIZE) * 2
      IF (FLAG .NE. J) CALL FAIL(ME, 'SHMEM_BARRIER missed a put')
      CALL SHMEM_BROADCAST64(D64, S64, M, 0, START, 1, SIZE, PSB)
      CALL SHMEM_FCOLLECT32(D32, S32, M, START, 1, SIZE, PSC)
      DO K = 1, M
        IF (ME .NE. START .AND. D64(K) .NE. DV(START, K))
     &    CALL FAIL(ME, 'SHMEM_BROADCAST64 on a strided set')
        DO I = 0, SIZE - 1
          IF (D32(I * M + K) .NE. RV(START + 2 * I, K))
     &      CALL FAIL(ME, 'SHMEM_FCOLLECT32 on a strided set')
        END DO
      END DO

      CALL SHMEM_BARRIER_ALL()
      PRINT *, 'PE', ME, ': OK'
      CALL SHMEM_FINALIZE()

      CONTAINS

! The values PE P gives as element K.
      INTEGER*4 FUNCTION IV(P, K)
      INTEGER P, K
      IV = P * 100 + K
      END FUNCTION
      INTEGER*8 FUNCTION KV(P, K)
      INTEGER P, K
      KV = INT(P, 8) * 4294967296_8 + K
      END FUNCTION
      REAL*4 FUNCTION RV(P, K)
      INTEGER P, K
      RV = REAL(P) + REAL(K) / 4.0
      END FUNCTION
      REAL*8 FUNCTION DV(P, K)
      INTEGER P, K
      DV = DBLE(P) * 1.0D6 + DBLE(K) / 8.0D0
      END FUNCTION

! Sources set to this PE's values, destinations to -1, everyone ready.
      SUBROUTINE RESET(P)
      INTEGER P, L
      CALL SHMEM_BARRIER_ALL()
      DO L = 1, 3 * MAXP
        S4(L) = IV(P, L)
        S8(L) = KV(P, L)
        S32(L) = RV(P, L)
        S64(L) = DV(P, L)
      END DO
      DO L = 1, 3 * MAXP * MAXP
        D4(L) = -1
        D8(L) = -1
        D32(L) = -1.0
        D64(L) = -1.0D0
      END DO
      CALL SHMEM_BARRIER_ALL()
      END SUBROUTINE
      END PROGRAM

      SUBROUTINE FAIL(ME, WHAT)
      INTEGER ME
      CHARACTER*(*) WHAT
      PRINT *, 'PE', ME, ': FAILED ', WHAT
      CALL SHMEM_GLOBAL_EXIT(1)
      END
