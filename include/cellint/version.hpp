#pragma once
/// @file
/// Library version.

/// Major version.
#define CELLINT_VERSION_MAJOR 0
/// Minor version.
#define CELLINT_VERSION_MINOR 1
/// Patch version.
#define CELLINT_VERSION_PATCH 0
/// Version as a string.
#define CELLINT_VERSION_STRING "0.1.0"
