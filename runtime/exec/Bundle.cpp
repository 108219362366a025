//===- Bundle.cpp - load and validate a bundle manifest -------------------===//

#include "runtime/exec/Bundle.h"

#include "runtime/exec/BundleFormat.h"
#include "runtime/support/Status.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <fstream>
#include <iterator>

namespace weft::runtime {
namespace {
using json = nlohmann::json;

/// Walks the manifest, turning any type or range problem into a status that
/// names the file and the JSON path.
class Reader {
public:
  explicit Reader(std::string file) : file(std::move(file)) {}

  absl::Status error(const std::string &where, const std::string &what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": ", where, ": ", what));
  }

  absl::StatusOr<const json *> field(const json &obj, const std::string &where,
                                     const char *key,
                                     json::value_t type) const {
    auto it = obj.find(key);
    if (it == obj.end())
      return error(where, absl::StrCat("missing field '", key, "'"));
    bool ok =
        it->type() == type ||
        (type == json::value_t::number_integer && it->is_number_unsigned()) ||
        (type == json::value_t::number_float && it->is_number());
    if (!ok)
      return error(absl::StrCat(where, ".", key), "has the wrong type");
    return &*it;
  }

  absl::StatusOr<std::vector<int64_t>>
  ints(const json &obj, const std::string &where, const char *key) const {
    auto arr = field(obj, where, key, json::value_t::array);
    if (!arr.ok())
      return arr.status();
    std::vector<int64_t> out;
    for (const json &v : **arr) {
      if (!v.is_number_integer())
        return error(absl::StrCat(where, ".", key), "must hold integers");
      out.push_back(v.get<int64_t>());
    }
    return out;
  }

  /// A value's "sharding": one list of mesh axes per dimension of the local
  /// `shape`, each axis of `mesh` at most once.
  absl::StatusOr<Sharding> sharding(const json &obj, const std::string &where,
                                    const MeshSpec &mesh,
                                    const std::vector<int64_t> &shape) const {
    auto arr = field(obj, where, "sharding", json::value_t::array);
    if (!arr.ok())
      return arr.status();
    std::string at = absl::StrCat(where, ".sharding");
    if ((*arr)->size() != shape.size())
      return error(at,
                   absl::StrCat("has ", (*arr)->size(),
                                " entries for a value of rank ", shape.size()));
    Sharding out;
    std::vector<std::string> seen;
    for (const json &dim : **arr) {
      if (!dim.is_array())
        return error(at, "each entry must be a list of mesh axes");
      out.emplace_back();
      for (const json &axis : dim) {
        if (!axis.is_string() || mesh.axisIndex(axis.get<std::string>()) < 0)
          return error(at, absl::StrCat("names ", axis.dump(),
                                        ", which is not an axis of the mesh"));
        std::string name = axis.get<std::string>();
        if (std::find(seen.begin(), seen.end(), name) != seen.end())
          return error(at, absl::StrCat("uses axis '", name, "' twice"));
        seen.push_back(name);
        out.back().push_back(name);
      }
    }
    return out;
  }

  absl::StatusOr<MeshSpec> mesh(const json &manifest) const {
    MeshSpec mesh;
    auto it = manifest.find("mesh");
    if (it == manifest.end())
      return mesh;
    if (!it->is_object())
      return error("mesh", "must be an object");
    auto sizes = ints(*it, "mesh", "sizes");
    if (!sizes.ok())
      return sizes.status();
    auto axes = field(*it, "mesh", "axes", json::value_t::array);
    if (!axes.ok())
      return axes.status();
    if ((*axes)->size() != sizes->size())
      return error("mesh", "needs one size per axis");
    for (size_t i = 0; i < sizes->size(); ++i) {
      const json &axis = (**axes)[i];
      if (!axis.is_string() || axis.get<std::string>().empty())
        return error(absl::StrCat("mesh.axes[", i, "]"), "must be a name");
      if (mesh.axisIndex(axis.get<std::string>()) >= 0)
        return error(absl::StrCat("mesh.axes[", i, "]"), "appears twice");
      if ((*sizes)[i] <= 0 || (*sizes)[i] > 65536)
        return error(absl::StrCat("mesh.sizes[", i, "]"),
                     "must be in [1, 65536]");
      mesh.axes.push_back(axis.get<std::string>());
      mesh.sizes.push_back((*sizes)[i]);
    }
    return mesh;
  }

  absl::StatusOr<DType> dtype(const json &obj, const std::string &where) const {
    auto s = field(obj, where, "dtype", json::value_t::string);
    if (!s.ok())
      return s.status();
    std::optional<DType> t = dtypeFromName((*s)->get<std::string>());
    if (!t)
      return error(where, absl::StrCat("unknown dtype '",
                                       (*s)->get<std::string>(), "'"));
    return *t;
  }

  absl::StatusOr<std::vector<int64_t>> shape(const json &obj,
                                             const std::string &where) const {
    auto s = ints(obj, where, "shape");
    if (!s.ok())
      return s.status();
    for (int64_t d : *s)
      if (d < 0)
        return error(where, "negative dimension in shape");
    return s;
  }

private:
  std::string file;
};

absl::StatusOr<ProgramSpec> readProgram(const Reader &r, const json &p,
                                        const std::string &where,
                                        const Bundle &bundle) {
  ProgramSpec prog;
  const json *arena = nullptr;
  WEFT_ASSIGN(arena,
              r.field(p, where, "arena_bytes", json::value_t::number_integer));
  prog.arenaBytes = arena->get<int64_t>();
  const json *values = nullptr;
  WEFT_ASSIGN(values, r.field(p, where, "values", json::value_t::array));
  for (size_t i = 0; i < values->size(); ++i) {
    const json &v = (*values)[i];
    std::string at = absl::StrCat(where, ".values[", i, "]");
    if (!v.is_object())
      return r.error(at, "must be an object");
    ValueSpec spec;
    WEFT_ASSIGN(spec.shape, r.shape(v, at));
    WEFT_ASSIGN(spec.dtype, r.dtype(v, at));
    const json *kind = nullptr;
    WEFT_ASSIGN(kind, r.field(v, at, "kind", json::value_t::string));
    std::string k = kind->get<std::string>();
    if (k == "arena") {
      spec.kind = ValueSpec::Kind::Arena;
      const json *off = nullptr;
      WEFT_ASSIGN(off, r.field(v, at, "offset", json::value_t::number_integer));
      spec.offset = off->get<int64_t>();
      if (spec.offset < 0 || spec.offset + spec.bytes() > prog.arenaBytes)
        return r.error(at, absl::StrCat("bytes [", spec.offset, ", ",
                                        spec.offset + spec.bytes(),
                                        ") lie outside the arena of ",
                                        prog.arenaBytes, " bytes"));
    } else if (k == "input" || k == "constant") {
      if (k == "input" && v.contains("sharding")) {
        WEFT_ASSIGN(spec.sharding, r.sharding(v, at, bundle.mesh, spec.shape));
      }
      spec.kind =
          k == "input" ? ValueSpec::Kind::Input : ValueSpec::Kind::Constant;
      const json *index = nullptr;
      WEFT_ASSIGN(index,
                  r.field(v, at, "index", json::value_t::number_integer));
      spec.index = index->get<int64_t>();
      if (spec.kind == ValueSpec::Kind::Constant &&
          (spec.index < 0 ||
           spec.index >= static_cast<int64_t>(bundle.constants.size())))
        return r.error(
            at, absl::StrCat("constant ", spec.index, " does not exist"));
    } else if (k == "param") {
      spec.kind = ValueSpec::Kind::Param;
      const json *name = nullptr;
      WEFT_ASSIGN(name, r.field(v, at, "name", json::value_t::string));
      spec.param = name->get<std::string>();
      if (!bundle.param(spec.param))
        return r.error(
            at, absl::StrCat("parameter '", spec.param, "' is not declared"));
    } else {
      return r.error(at, absl::StrCat("unknown kind '", k, "'"));
    }
    prog.values.push_back(std::move(spec));
  }
  auto checkId = [&](int64_t id, const std::string &at) -> absl::Status {
    if (id < 0 || id >= static_cast<int64_t>(prog.values.size()))
      return r.error(at, absl::StrCat("value ", id, " does not exist"));
    return absl::OkStatus();
  };
  WEFT_ASSIGN(prog.inputs, r.ints(p, where, "inputs"));
  for (int64_t id : prog.inputs)
    if (absl::Status s = checkId(id, where + ".inputs"); !s.ok())
      return s;
  const json *steps = nullptr;
  WEFT_ASSIGN(steps, r.field(p, where, "steps", json::value_t::array));
  for (size_t i = 0; i < steps->size(); ++i) {
    const json &s = (*steps)[i];
    std::string at = absl::StrCat(where, ".steps[", i, "]");
    if (!s.is_object())
      return r.error(at, "must be an object");
    StepSpec step;
    const json *op = nullptr;
    WEFT_ASSIGN(op, r.field(s, at, "op", json::value_t::string));
    step.op = op->get<std::string>();
    WEFT_ASSIGN(step.operands, r.ints(s, at, "operands"));
    WEFT_ASSIGN(step.results, r.ints(s, at, "results"));
    for (int64_t id : step.operands)
      if (absl::Status st = checkId(id, at + ".operands"); !st.ok())
        return st;
    for (int64_t id : step.results)
      if (absl::Status st = checkId(id, at + ".results"); !st.ok())
        return st;
    const json *attrs = nullptr;
    WEFT_ASSIGN(attrs, r.field(s, at, "attrs", json::value_t::object));
    step.attrs = *attrs;
    prog.steps.push_back(std::move(step));
  }
  for (const char *key : {"outputs", "assigns"}) {
    const json *list = nullptr;
    WEFT_ASSIGN(list, r.field(p, where, key, json::value_t::array));
    for (size_t i = 0; i < list->size(); ++i) {
      const json &o = (*list)[i];
      std::string at = absl::StrCat(where, ".", key, "[", i, "]");
      if (!o.is_object())
        return r.error(at, "must be an object");
      bool isOutput = std::string(key) == "outputs";
      const json *name = nullptr, *value = nullptr;
      WEFT_ASSIGN(name, r.field(o, at, isOutput ? "name" : "param",
                                json::value_t::string));
      WEFT_ASSIGN(value,
                  r.field(o, at, "value", json::value_t::number_integer));
      if (absl::Status st = checkId(value->get<int64_t>(), at); !st.ok())
        return st;
      (isOutput ? prog.outputs : prog.assigns)
          .push_back({name->get<std::string>(), value->get<int64_t>()});
      if (isOutput && o.contains("sharding")) {
        WEFT_ASSIGN(prog.outputShardings[name->get<std::string>()],
                    r.sharding(o, at, bundle.mesh,
                               prog.values[value->get<int64_t>()].shape));
      }
      if (!isOutput && !bundle.param(name->get<std::string>()))
        return r.error(at, "assigns an undeclared parameter");
    }
  }
  return prog;
}
} // namespace

int64_t ValueSpec::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::optional<int64_t> ProgramSpec::output(const std::string &name) const {
  for (const auto &[n, id] : outputs)
    if (n == name)
      return id;
  return std::nullopt;
}

int64_t Bundle::metaInt(const std::string &key) const {
  auto it = meta.find(key);
  return it != meta.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

const ParamSpec *Bundle::param(const std::string &name) const {
  for (const ParamSpec &p : params)
    if (p.name == name)
      return &p;
  return nullptr;
}

absl::StatusOr<Bundle> Bundle::load(const std::string &dir) {
  std::string file = dir + "/" + kManifestFile;
  std::ifstream in(file);
  if (!in)
    return absl::NotFoundError(absl::StrCat(file, ": cannot open (is '", dir,
                                            "' a bundle directory?)"));
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  return parse(text, file, dir);
}

absl::StatusOr<Bundle> Bundle::parse(const std::string &text,
                                     const std::string &file,
                                     const std::string &dir) {
  json manifest = json::parse(text, nullptr, /*allow_exceptions=*/false);
  Reader r(file);
  if (manifest.is_discarded() || !manifest.is_object())
    return r.error("manifest", "is not a JSON object");
  auto format = manifest.find("format");
  if (format == manifest.end() || !format->is_string() ||
      *format != kBundleFormat)
    return r.error("format", absl::StrCat("expected \"", kBundleFormat, "\""));
  if (!manifest.contains("version") ||
      !manifest["version"].is_number_integer() ||
      manifest["version"].get<int>() != kBundleVersion)
    return r.error("version",
                   absl::StrCat("this runtime reads bundle version ",
                                kBundleVersion,
                                "; recompile the bundle with this weftc"));
  Bundle bundle;
  bundle.path = dir.empty() ? file : dir;
  bundle.meta = json::object();
  if (auto meta = manifest.find("meta"); meta != manifest.end()) {
    if (!meta->is_object())
      return r.error("meta", "must be an object");
    bundle.meta = *meta;
  }
  WEFT_ASSIGN(bundle.mesh, r.mesh(manifest));
  const json *params = nullptr;
  WEFT_ASSIGN(params,
              r.field(manifest, "manifest", "params", json::value_t::array));
  for (size_t i = 0; i < params->size(); ++i) {
    const json &p = (*params)[i];
    std::string at = absl::StrCat("params[", i, "]");
    if (!p.is_object())
      return r.error(at, "must be an object");
    ParamSpec spec;
    const json *name = nullptr, *init = nullptr;
    WEFT_ASSIGN(name, r.field(p, at, "name", json::value_t::string));
    WEFT_ASSIGN(init, r.field(p, at, "init", json::value_t::string));
    spec.name = name->get<std::string>();
    spec.init = init->get<std::string>();
    if (spec.init != "zeros" && spec.init != "ones" && spec.init != "normal" &&
        spec.init != "uniform")
      return r.error(at, absl::StrCat("unknown init '", spec.init, "'"));
    WEFT_ASSIGN(spec.shape, r.shape(p, at));
    WEFT_ASSIGN(spec.dtype, r.dtype(p, at));
    if (auto scale = p.find("scale"); scale != p.end()) {
      if (!scale->is_number())
        return r.error(at + ".scale", "has the wrong type");
      spec.scale = scale->get<double>();
    }
    if (auto state = p.find("state"); state != p.end()) {
      if (!state->is_boolean())
        return r.error(at + ".state", "has the wrong type");
      spec.state = state->get<bool>();
    }
    if (p.contains("sharding")) {
      WEFT_ASSIGN(spec.sharding, r.sharding(p, at, bundle.mesh, spec.shape));
    }
    bundle.params.push_back(std::move(spec));
  }
  const json *constants = nullptr;
  WEFT_ASSIGN(constants,
              r.field(manifest, "manifest", "constants", json::value_t::array));
  for (size_t i = 0; i < constants->size(); ++i) {
    const json &c = (*constants)[i];
    std::string at = absl::StrCat("constants[", i, "]");
    if (!c.is_object())
      return r.error(at, "must be an object");
    ConstantSpec spec;
    WEFT_ASSIGN(spec.shape, r.shape(c, at));
    WEFT_ASSIGN(spec.dtype, r.dtype(c, at));
    if (c.contains("splat") && c["splat"].is_number()) {
      spec.splat = true;
      spec.values = {c["splat"].get<double>()};
    } else if (c.contains("values") && c["values"].is_array()) {
      for (const json &v : c["values"]) {
        if (!v.is_number())
          return r.error(at + ".values", "must hold numbers");
        spec.values.push_back(v.get<double>());
      }
      int64_t n = 1;
      for (int64_t d : spec.shape)
        n *= d;
      if (static_cast<int64_t>(spec.values.size()) != n)
        return r.error(at, "has the wrong number of values for its shape");
    } else {
      return r.error(at, "needs 'splat' or 'values'");
    }
    bundle.constants.push_back(std::move(spec));
  }
  const json *programs = nullptr;
  WEFT_ASSIGN(programs,
              r.field(manifest, "manifest", "programs", json::value_t::object));
  for (auto it = programs->begin(); it != programs->end(); ++it) {
    if (!it->is_object())
      return r.error("programs." + it.key(), "must be an object");
    auto prog = readProgram(r, *it, "programs." + it.key(), bundle);
    if (!prog.ok())
      return prog.status();
    bundle.programs[it.key()] = std::move(*prog);
  }
  return bundle;
}

std::vector<uint8_t> ConstantSpec::encoded() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  size_t width = dtypeSize(dtype);
  std::vector<uint8_t> bytes(n * width);
  for (int64_t i = 0; i < n; ++i)
    encode(splat ? values[0] : values[i], dtype, &bytes[i * width]);
  return bytes;
}

std::vector<std::vector<std::string>> Bundle::communicationGroups() const {
  std::vector<std::vector<std::string>> groups;
  for (const auto &[name, spec] : programs)
    for (const StepSpec &step : spec.steps)
      if (auto axes = step.attrs.find("axes"); // Only collectives have it.
          axes != step.attrs.end() && axes->is_array()) {
        std::vector<std::string> names;
        for (const auto &a : *axes)
          if (a.is_string())
            names.push_back(a.get<std::string>());
        groups.push_back(std::move(names));
      }
  for (const ParamSpec &p : params)
    if (!MeshSpec::axesOf(p.sharding).empty())
      groups.push_back(MeshSpec::axesOf(p.sharding));
  for (const auto &[name, spec] : programs)
    for (const auto &[output, sharding] : spec.outputShardings)
      if (!MeshSpec::axesOf(sharding).empty())
        groups.push_back(MeshSpec::axesOf(sharding));
  return groups;
}

} // namespace weft::runtime
