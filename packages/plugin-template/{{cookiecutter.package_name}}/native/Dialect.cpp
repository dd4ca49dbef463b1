// Definitions generated from Dialect.td, plus the dialect's initializer.
#include "Dialect.h"

#include "mlir/IR/DialectImplementation.h"

#include "dialect-defs.inc"

#define GET_OP_CLASSES
#include "op-defs.inc"

void {{ cookiecutter.plugin_name }}_native::PluginDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "op-defs.inc"
      >();
}
