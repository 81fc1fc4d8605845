/* SPDX-License-Identifier: MIT */
/*
 * The project's version. The Makefile's VERSION is the one place it is set and
 * reaches every object as -DRN_VERSION="x.y.z"; a build that bypasses the Makefile
 * (a fuzzer compiled by hand, an IDE) still compiles and says so.
 */
#ifndef RN_VERSION_H
#define RN_VERSION_H

#ifndef RN_VERSION
#define RN_VERSION "unknown"
#endif

/*
 * what(1)'s marker before the version inside the plugin library, so a tool can tell which
 * version a library file is without loading it (the fleet sweep compares hosts by it).
 */
#define RN_VERSION_TAG "@(#)nccl-net-roce "

#endif /* RN_VERSION_H */
