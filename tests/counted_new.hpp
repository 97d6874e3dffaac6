// The global operator new and delete, replaced for one program that counts
// its heap (include this in exactly one of its files).  The includer defines
// counted_new (malloc'd memory, or null) and counted_delete.  Every form
// that a plain delete may free is replaced, so that each pair stays malloc
// and free (under ASan the forms not replaced are its own: the standard
// library's temporary buffers take the nothrow form, and ASan reports new
// vs free).  The aligned forms are left to pair among themselves.
#pragma once

#include <cstddef>
#include <new>

void *counted_new(std::size_t n) noexcept;
void counted_delete(void *p) noexcept;

void *operator new(std::size_t n) {
    if (void *p = counted_new(n)) return p;
    throw std::bad_alloc();
}
void *operator new[](std::size_t n) {
    if (void *p = counted_new(n)) return p;
    throw std::bad_alloc();
}
void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return counted_new(n); }
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return counted_new(n); }
void operator delete(void *p) noexcept { counted_delete(p); }
void operator delete[](void *p) noexcept { counted_delete(p); }
void operator delete(void *p, std::size_t) noexcept { counted_delete(p); }
void operator delete[](void *p, std::size_t) noexcept { counted_delete(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { counted_delete(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { counted_delete(p); }
