// Template-heavy C++ for tests/perf_cpp.rs: std::sort with a lambda, a std::vector of
// structs grown by push_back (its _M_realloc_insert), constructors, an operator++; busy for
// about argv[1] milliseconds. Built g++ -O2 -g by testdata/build-unwind.sh: inlined frames
// with linkage names, template instances whose DWARF name differs from their symbol.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

namespace geo {

template <typename T> struct Vec3 {
    T x, y, z;
    Vec3(T a, T b, T c) : x(a), y(b), z(c) {}
    T norm2() const { return x * x + y * y + z * z; }
};

struct Counter {
    unsigned long n = 0;
    Counter &operator++() {
        n = n * 6364136223846793005UL + 1442695040888963407UL;
        return *this;
    }
};

struct Mesh {
    std::vector<Vec3<double>> points;
    explicit Mesh(int count) {
        Counter c;
        for (int i = 0; i < count; i++) {
            ++c;
            points.push_back(Vec3<double>(double(c.n % 1000), double((c.n >> 10) % 1000),
                                          double((c.n >> 20) % 1000)));
        }
    }
    void sort_by_distance(const Vec3<double> &from) {
        std::sort(points.begin(), points.end(), [&](const Vec3<double> &a, const Vec3<double> &b) {
            Vec3<double> da(a.x - from.x, a.y - from.y, a.z - from.z);
            Vec3<double> db(b.x - from.x, b.y - from.y, b.z - from.z);
            return da.norm2() < db.norm2();
        });
    }
};

} // namespace geo

static volatile double sink;

int main(int argc, char **argv) {
    long ms = argc > 1 ? std::atol(argv[1]) : 300;
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    int round = 0;
    while (std::chrono::steady_clock::now() < end) {
        geo::Mesh mesh(20000 + round % 7);
        mesh.sort_by_distance(geo::Vec3<double>(500.0, 500.0, double(round % 1000)));
        sink = sink + mesh.points.front().x + mesh.points.back().z;
        round++;
    }
    return 0;
}
