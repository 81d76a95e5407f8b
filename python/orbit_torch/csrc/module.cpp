// The Python face of the backend: the class torch.distributed holds, and its factory.
#include <torch/csrc/utils/pybind.h>
#include <torch/python.h>

#include "backend.hpp"

namespace py = pybind11;
using orbit_torch::OrbitBackend;

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  // c10d's Backend must be known to pybind before a subclass of it is registered
  py::module_::import("torch.distributed");
  py::class_<OrbitBackend, c10d::Backend, c10::intrusive_ptr<OrbitBackend>>(m, "OrbitBackend")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, double timeout_s,
                       const py::object& parent, bool member) {
             c10::intrusive_ptr<OrbitBackend> p;
             if (!parent.is_none())
               p = parent.cast<c10::intrusive_ptr<OrbitBackend>>();
             auto ms = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0));
             py::gil_scoped_release nogil;  // rendezvous blocks; other Python threads go on
             return c10::make_intrusive<OrbitBackend>(store, rank, size, ms, p, member);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout_s"), py::arg("parent") = py::none(),
           py::arg("member") = true)
      // torch calls this on a rank that is in none of a split's new groups
      .def("perform_nocolor_split",
           [](OrbitBackend& self, const py::object& /*device*/) {
             py::gil_scoped_release nogil;
             self.performNocolorSplit();
           })
      .def_property_readonly("comm_timeout_s", [](OrbitBackend& self) { return self.commTimeout(); });
}
