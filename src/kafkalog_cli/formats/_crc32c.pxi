# CRC-32C for the compiled core's modules (included by each): the SSE4.2 instruction through
# _crc32c.h where the CPU has it, else the `crc32c` package (formats/crc.py), called per buffer.
from libc.stdint cimport uint8_t, uint32_t
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.buffer cimport PyBUF_READ

from kafkalog_cli.formats.crc import crc32c as _crc32c_package

cdef extern from "_crc32c.h":
    int kl_crc32c_ready() nogil
    uint32_t kl_crc32c(uint32_t crc, const unsigned char* p, size_t n) nogil

cdef bint HW_CRC32C = kl_crc32c_ready()
# whether the CRC-32C above runs in C (without the GIL), for the Python side
CRC32C_IN_C = bool(HW_CRC32C)


cdef inline uint32_t crc32c_at(const uint8_t* p, Py_ssize_t n) except? 0:
    """The CRC-32C of p[0:n), as crc32c.crc32c(bytes) gives it."""
    if HW_CRC32C:
        return kl_crc32c(0, p, n)
    return _crc32c_package(PyMemoryView_FromMemory(<char*>p, n, PyBUF_READ))
