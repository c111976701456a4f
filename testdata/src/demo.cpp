// demo.cpp - C++ test program for stacksym's ELF symbolizer (demangling).
//
// Built by ../build.sh as bin/cpp-O2-g (g++ -O2 -g).  Every function below is
// noinline (and noclone, so gcc does not make ".constprop"/".isra" copies),
// so each one keeps its own symbol.  Demangled names it produces include:
//
//   stacksym_demo::geom::operator+(stacksym_demo::geom::Vec2 const&, stacksym_demo::geom::Vec2 const&)
//   stacksym_demo::geom::Shape::scale(int) const
//   stacksym_demo::geom::Shape::scale(double) const
//   stacksym_demo::geom::Shape::scale(long, char const*)
//   stacksym_demo::geom::Shape::area() const            (virtual)
//   stacksym_demo::geom::Circle::area() const           (virtual override)
//   int stacksym_demo::sum_all<int>(int const*, unsigned int)
//   double stacksym_demo::sum_all<double>(double const*, unsigned int)
//   stacksym_demo::run_lambda(int)::{lambda(int)#1}::operator()(int) const
//   int stacksym_demo::apply_twice<stacksym_demo::run_lambda(int)::{lambda(int)#1}>(...)
//   stacksym_demo::checked_div(int, int)
//   stacksym_demo::checked_div(int, int) [clone .cold]  (cold fragment, .text.unlikely)
//   vtable for stacksym_demo::geom::Circle              (data object)
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define NOINLINE __attribute__((noinline, noclone))

namespace stacksym_demo {
namespace geom {

struct Vec2 {
    double x, y;
};

// Operator overload (free function).
NOINLINE Vec2 operator+(const Vec2 &a, const Vec2 &b)
{
    return Vec2{a.x + b.x, a.y + b.y};
}

class Shape {
  public:
    explicit Shape(int id) : id_(id) {}
    virtual ~Shape() {}

    // Overloaded methods.
    NOINLINE int scale(int f) const;
    NOINLINE double scale(double f) const;
    NOINLINE long scale(long f, const char *tag);

    NOINLINE virtual double area() const;

  protected:
    int id_;
    long hits_ = 0;
};

NOINLINE int Shape::scale(int f) const { return id_ * f + 1; }

NOINLINE double Shape::scale(double f) const { return id_ * f + 0.5; }

NOINLINE long Shape::scale(long f, const char *tag)
{
    hits_ += (long)std::strlen(tag);
    return hits_ * f + id_;
}

NOINLINE double Shape::area() const { return (double)id_; }

class Circle : public Shape {
  public:
    Circle(int id, double r) : Shape(id), r_(r) {}
    NOINLINE double area() const override;

  private:
    double r_;
};

NOINLINE double Circle::area() const { return 3.14159265358979 * r_ * r_ + id_; }

} // namespace geom

// Function template, instantiated for int and double below.
template <typename T>
NOINLINE T sum_all(const T *v, unsigned n)
{
    T acc = T();
    for (unsigned i = 0; i < n; i++)
        acc += v[i] * (T)(i + 1);
    return acc;
}

// Template taking a callable: instantiated with a lambda's closure type.
template <typename F>
NOINLINE int apply_twice(F f, int x)
{
    return f(f(x));
}

NOINLINE int run_lambda(int k)
{
    auto lam = [k](int v) __attribute__((noinline, noclone)) { return v * k + 1; };
    return apply_twice(lam, k + 2);
}

// Cold path: gcc -O2 splits the block calling the cold function into
// .text.unlikely as "stacksym_demo::checked_div(int, int) [clone .cold]".
[[noreturn]] __attribute__((cold, noinline)) static void bad_divisor(int a)
{
    std::fprintf(stderr, "checked_div: %d / 0\n", a);
    std::abort();
}

NOINLINE int checked_div(int a, int b)
{
    if (b == 0)
        bad_divisor(a);
    return a / b + a % b;
}

// Virtual dispatch through a base pointer, so area() overrides are kept.
NOINLINE double total_area(const geom::Shape *const *shapes, unsigned n)
{
    double t = 0;
    for (unsigned i = 0; i < n; i++)
        t += shapes[i]->area();
    return t;
}

} // namespace stacksym_demo

int main(int argc, char **argv)
{
    using namespace stacksym_demo;
    (void)argv;

    geom::Vec2 a{1.0, 2.0}, b{(double)argc, 0.25};
    geom::Vec2 c = a + b;

    geom::Shape s(argc + 1);
    geom::Circle circ(argc + 2, 1.5);
    const geom::Shape *shapes[] = {&s, &circ};

    int ints[] = {1, 2, 3, argc};
    double dbls[] = {0.5, 1.5, (double)argc};

    long r = s.scale(argc) + (long)s.scale(2.0) + s.scale(3L, "tag");
    r += sum_all(ints, 4) + (long)sum_all(dbls, 3);
    r += run_lambda(argc);
    r += checked_div(1000, argc);
    r += (long)total_area(shapes, 2) + (long)c.x;

    std::printf("cpp demo: %ld\n", r & 0xff);
    return 0;
}
