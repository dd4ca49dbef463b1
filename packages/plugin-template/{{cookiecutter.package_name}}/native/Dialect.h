// C++ side of the `{{ cookiecutter.plugin_name }}` dialect: the classes mlir-tblgen generates from Dialect.td.
#pragma once

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialect-decls.inc"

#define GET_OP_CLASSES
#include "op-decls.inc"
