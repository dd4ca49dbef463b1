// The native plugin ABI of Triton >= 3.7 (plugin API version 2), declared here rather than included.
//
// Why our own declaration: the Triton wheel ships no C++ headers, and Triton's own header pulls in
// its Python-binding headers. The loader only needs this struct layout and the exported C function
// `tritonGetPluginInfo`; the layout is the same in Triton 3.7.1, 3.8.0 and 3.9.0. Keep the field order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mlir/IR/Value.h"

namespace mlir {
class DialectRegistry;
class PassManager;
} // namespace mlir

namespace tritonx_abi {

/// Checked by Triton when it loads the library; a mismatch is a fatal error.
constexpr uint32_t kPluginApiVersion = 2;

/// Adds the pass to Triton's pass manager; `args` are the strings given in Python.
using AddPassFn = void (*)(mlir::PassManager *pm, const std::vector<std::string> &args);
/// Registers the pass in MLIR's global registry (for command-line tools).
using RegisterPassFn = void (*)();
/// Inserts the dialect into the registry of every context Triton creates.
using RegisterDialectFn = void (*)(mlir::DialectRegistry *registry);
/// A custom op: Triton makes it an `ir.builder` method that calls this with its builder (Triton's
/// `TritonOpBuilder`, whose class is not in any header the wheel ships: opaque here) and the operand
/// values. The op's result goes into `operands[0]`; Triton 3.8+ returns it to Python, 3.7.1 drops it.
using AddOpFn = void (*)(void *tritonOpBuilder, std::vector<mlir::Value> &operands);

struct PassEntry {
  const char *name;
  const char *version;
  AddPassFn addPass;
  RegisterPassFn registerPass;
};

struct DialectEntry {
  const char *name;
  const char *version;
  RegisterDialectFn registerDialect;
};

struct OpEntry {
  const char *name;
  AddOpFn addOp;
};

struct PluginInfo {
  uint32_t apiVersion;
  const char *pluginName;
  const char *pluginVersion;
  PassEntry *passes;
  size_t numPasses;
  DialectEntry *dialects;
  size_t numDialects;
  OpEntry *ops;
  size_t numOps;
  /// Must equal the loading Triton's version (the part before any '+').
  const char *tritonVersion;
};

} // namespace tritonx_abi
